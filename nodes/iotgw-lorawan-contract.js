// Compiled from src/nodes/iotgw-lorawan-contract.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-lorawan-contract").default;
