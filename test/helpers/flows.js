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

/** A terminal-mode node (id mode) with the form's defaults; `props` override. */
function modeNode(props = {}) {
  return { id: 'mode', type: 'iotgw-terminal-mode', gateway: 'gw', mode: 0, wakeupInterval: 0, family: 'any', ...props };
}

/** A send-message node (id send) with the form's defaults; `props` override. */
function sendMessageNode(props = {}) {
  return { id: 'send', type: 'iotgw-send-message', gateway: 'gw', transportType: '', messageLifetime: '', messageClass: '', maxRawBytes: 1023, ...props };
}

/** A message poller (id poller, account gw) emitting one msg per message into `out`; `props` override. */
function messagePollerNode(props = {}) {
  return {
    id: 'poller',
    type: 'iotgw-message-poller',
    gateway: 'gw',
    intervalSeconds: 3600,
    startFrom: '-1h',
    output: 'record',
    contextStore: '',
    autoStart: true,
    fullAt: 500,
    sinFilter: '',
    mobileFilter: '',
    includeRaw: true,
    wires: [['out']],
    ...props,
  };
}

module.exports = { DEMO_CREDS, gatewayNode, modeNode, sendMessageNode, messagePollerNode };
