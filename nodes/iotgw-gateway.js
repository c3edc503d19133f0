// The registrar entry of iotgw-gateway (src/nodes/iotgw-gateway.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-gateway"];
