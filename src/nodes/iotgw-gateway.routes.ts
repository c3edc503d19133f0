/**
 * The admin route of the gateway dialog's "test connection" button (issue 26), registered
 * at start by the registrar (scripts/registrar.js): POST /iotgw/test-connection, for users
 * allowed to edit gateway config nodes; stored secrets only of a deployed iotgw-gateway, to
 * its deployed base URL (issue 34). Nothing heavy at the top: the node's module (and
 * the HTTP client) is required by the first request.
 */
import type { NodeAPI } from 'node-red';
import { testConnectionRoute } from '../lib/node-red/admin-route';

export function routes(RED: NodeAPI): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  testConnectionRoute(RED, '/iotgw/test-connection', 'iotgw-gateway', 'iotgw-gateway.write', () => (require('./iotgw-gateway') as typeof import('./iotgw-gateway')).testConnection);
}
