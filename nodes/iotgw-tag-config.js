// The registrar entry of iotgw-tag-config (src/nodes/iotgw-tag-config.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-tag-config"];
