// Compiled from src/nodes/iotgw-gateway.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-gateway").default;
