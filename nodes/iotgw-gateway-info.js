// The registrar entry of iotgw-gateway-info (src/nodes/iotgw-gateway-info.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-gateway-info"];
