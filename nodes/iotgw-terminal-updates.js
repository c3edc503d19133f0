// The registrar entry of iotgw-terminal-updates (src/nodes/iotgw-terminal-updates.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-terminal-updates"];
