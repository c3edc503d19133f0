// The registrar entry of iotgw-message-tracker (src/nodes/iotgw-message-tracker.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-message-tracker"];
