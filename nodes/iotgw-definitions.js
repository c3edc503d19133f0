// Bundled from src/nodes/iotgw-definitions.ts by scripts/bundle.js (npm run build); this file is written by it.
module.exports = require('../dist/bundle/nodes.js')["iotgw-definitions"];
