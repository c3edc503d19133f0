// The registrar entry of iotgw-lorawan-devices (src/nodes/iotgw-lorawan-devices.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-lorawan-devices"];
