// The registrar entry of iotgw-message-poller (src/nodes/iotgw-message-poller.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-message-poller"];
