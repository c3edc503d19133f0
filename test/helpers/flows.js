'use strict';
/**
 * Flow fixtures shared by the in-process tests (harness.js) and the child Node-RED tests
 * (child-red.js): no runtime is loaded here.
 */

/** The simulator's demo account, as a gateway config node's credentials. */
const DEMO_CREDS = { clientId: 'demo', clientSecret: 'demo-secret', brokerClientId: 'sim-client', brokerAccessToken: 'sim-access-token' };

/** A gateway config node for the simulator (limits off, 3 in flight); `props` override. */
function gatewayNode(sim, props = {}) {
  return {
    id: 'gw',
    type: 'iotgw-gateway',
    name: 'sim',
    baseUrl: sim.url,
    apiVersion: '1.0',
    rateLimitCalls: 0,
    rateLimitWindowSeconds: 60,
    maxConcurrent: 3,
    maxBatchSize: 100,
    timeoutSeconds: 5,
    ...props,
  };
}

module.exports = { DEMO_CREDS, gatewayNode };
