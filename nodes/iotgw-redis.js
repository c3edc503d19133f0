// The registrar entry of iotgw-redis (src/nodes/iotgw-redis.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-redis"];
