// Compiled from src/nodes/iotgw-message-poller.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-message-poller").default;
