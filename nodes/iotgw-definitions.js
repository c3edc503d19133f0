// The registrar entry of iotgw-definitions (src/nodes/iotgw-definitions.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-definitions"];
