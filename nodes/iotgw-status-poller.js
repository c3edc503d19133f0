// Compiled from src/nodes/iotgw-status-poller.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-status-poller").default;
