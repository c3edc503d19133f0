// The registrar entry of iotgw-lorawan-referral (src/nodes/iotgw-lorawan-referral.ts); written by scripts/registrar.js (npm run build).
module.exports = require('../dist/nodes.js')["iotgw-lorawan-referral"];
