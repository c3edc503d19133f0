// Compiled from src/nodes/iotgw-lorawan-devices.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-lorawan-devices").default;
