// The registrar entry of iotgw-gateway-call (src/nodes/iotgw-gateway-call.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-gateway-call"];
