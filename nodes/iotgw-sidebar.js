// The editor plugin iotgw-sidebar (src/plugins/iotgw-sidebar.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/plugins/iotgw-sidebar.js').default;
