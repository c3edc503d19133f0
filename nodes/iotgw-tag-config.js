// Compiled from src/nodes/iotgw-tag-config.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-tag-config").default;
