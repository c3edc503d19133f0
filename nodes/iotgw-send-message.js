// Compiled from src/nodes/iotgw-send-message.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-send-message").default;
