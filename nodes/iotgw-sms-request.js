// Compiled from src/nodes/iotgw-sms-request.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-sms-request").default;
