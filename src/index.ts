/**
 * The package's JavaScript API, for code outside Node-RED (tests of your own flows,
 * scripts): the bundled gateway simulator and the error codes the nodes use.
 * Node-RED itself loads the nodes listed in package.json "node-red.nodes".
 */
export { startSimulator, Simulator, type SimulatorOptions } from './simulator';
export { GatewayError, ERROR_CODES, type ErrorCode } from './lib/common/errors';
