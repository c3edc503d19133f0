// The registrar entry of iotgw-account-status (src/nodes/iotgw-account-status.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-account-status"];
