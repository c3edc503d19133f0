// Compiled from src/nodes/iotgw-user.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-user").default;
