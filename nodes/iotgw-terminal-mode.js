// Compiled from src/nodes/iotgw-terminal-mode.ts (see package.json "build").
module.exports = require("../dist/nodes/iotgw-terminal-mode").default;
