// The registrar entry of iotgw-terminals (src/nodes/iotgw-terminals.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-terminals"];
