// The registrar entry of iotgw-cancel (src/nodes/iotgw-cancel.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-cancel"];
