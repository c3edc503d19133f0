/**
 * Who asks for a "test connection" (issue 34), as the admin route (admin-route.ts) saw it,
 * handed to the node's test (test-connection.ts) beside the posted body. A file of its own
 * so that the route, loaded at start, imports nothing else.
 */

/** The caller of one test. */
export interface TestCaller {
  /** The route's config node type: the only type whose stored credentials it uses. */
  type: string;
  /** May the user deploy (permission flows.write)? Only then does `${VAR}` in a posted field resolve. */
  mayDeploy: boolean;
}

/** Where the route puts the caller in the body: a symbol, which no posted JSON can hold. */
export const CALLER: unique symbol = Symbol('iotgw test-connection caller');
