// The registrar entry of iotgw-message-lookup (src/nodes/iotgw-message-lookup.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-message-lookup"];
