// The registrar entry of iotgw-codec (src/nodes/iotgw-codec.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-codec"];
