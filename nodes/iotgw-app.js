// The registrar entry of iotgw-app (src/nodes/iotgw-app.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-app"];
