// The registrar entry of iotgw-user (src/nodes/iotgw-user.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-user"];
