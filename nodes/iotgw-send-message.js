// The registrar entry of iotgw-send-message (src/nodes/iotgw-send-message.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-send-message"];
