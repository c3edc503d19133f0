// Compiled from src/nodes/iotgw-lorawan-referral.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-lorawan-referral").default;
