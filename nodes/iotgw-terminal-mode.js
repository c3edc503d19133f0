// The registrar entry of iotgw-terminal-mode (src/nodes/iotgw-terminal-mode.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-terminal-mode"];
