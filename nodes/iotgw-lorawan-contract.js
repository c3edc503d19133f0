// The registrar entry of iotgw-lorawan-contract (src/nodes/iotgw-lorawan-contract.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-lorawan-contract"];
