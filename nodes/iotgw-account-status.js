// Bundled from src/nodes/iotgw-account-status.ts by scripts/bundle.js (npm run build); this file is written by it.
module.exports = require('../dist/bundle/nodes.js')["iotgw-account-status"];
