// Compiled from src/nodes/iotgw-message-tracker.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-message-tracker").default;
