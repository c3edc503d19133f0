// The registrar entry of iotgw-status-poller (src/nodes/iotgw-status-poller.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-status-poller"];
