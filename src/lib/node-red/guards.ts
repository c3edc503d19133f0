/**
 * Guards and message helpers shared by the node files (lib never imports a node file).
 */
import type { AppNode, GatewayNode } from './config-nodes';
import type { Node } from 'node-red';
import type { DefinitionsNode } from '../codec';

/** True for an `iotgw-gateway` config node. */
export function isGateway(n: unknown): n is GatewayNode {
  return !!n && typeof (n as GatewayNode).client === 'function' && typeof (n as GatewayNode).bearerAuth === 'function';
}

/** True for an `iotgw-app` config node. */
export function isApp(n: unknown): n is AppNode {
  return !!n && typeof (n as AppNode).client === 'function' && typeof (n as AppNode).get === 'function';
}

export { joinProblems } from '../common/checks';

/** True for an `iotgw-definitions` config node (see src/lib/codec). */
export function isDefinitions(n: unknown): n is Node & DefinitionsNode {
  return !!n && typeof (n as DefinitionsNode).definitions === 'function';
}
