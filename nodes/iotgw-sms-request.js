// The registrar entry of iotgw-sms-request (src/nodes/iotgw-sms-request.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-sms-request"];
