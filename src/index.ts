/**
 * The package's JavaScript API, for code outside Node-RED (tests of your own flows,
 * scripts): the bundled gateway simulator and the error codes the nodes use.
 * Node-RED itself loads the nodes listed in package.json "node-red.nodes".
 * Its declarations (dist/index.d.ts, package.json "types") are generated from this source.
 */
export { startSimulator, Simulator, type SimulatorOptions } from './simulator';
export type { CallRecord, Fault, SimServer } from './simulator/server';
export type { TerminalGateway, TerminalOptions } from './simulator/terminal';
export { GatewayError, ERROR_CODES, type ErrorCode, type GatewayErrorOptions } from './lib/common/errors';
