// Compiled from src/nodes/iotgw-cancel.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-cancel").default;
