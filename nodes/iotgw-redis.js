// Compiled from src/nodes/iotgw-redis.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-redis").default;
