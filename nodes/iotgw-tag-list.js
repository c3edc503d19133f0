// The registrar entry of iotgw-tag-list (src/nodes/iotgw-tag-list.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-tag-list"];
