// Compiled from src/nodes/iotgw-app.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-app").default;
