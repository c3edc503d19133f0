// Compiled from src/nodes/iotgw-tag-list.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-tag-list").default;
