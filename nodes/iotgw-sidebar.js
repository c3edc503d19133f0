// Bundled from src/plugins/iotgw-sidebar.ts by scripts/bundle.js (npm run build); this file is written by it.
module.exports = require('../dist/bundle/plugins.js')["iotgw-sidebar"];
