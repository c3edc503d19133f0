/**
 * The admin route of the iotgw-app dialog's "test connection" button (issue 26), registered
 * at start by the registrar (scripts/registrar.js): POST /iotgw-app/test-connection, for
 * users allowed to edit app config nodes; stored secrets only of a deployed iotgw-app, to its
 * deployed base URL (issue 34). Nothing heavy at the top: the node's module (and
 * the HTTP client) is required by the first request.
 */
import type { NodeAPI } from 'node-red';
import { testConnectionRoute } from '../lib/node-red/admin-route';

export function routes(RED: NodeAPI): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  testConnectionRoute(RED, '/iotgw-app/test-connection', 'iotgw-app', 'iotgw-app.write', () => (require('./iotgw-app') as typeof import('./iotgw-app')).testAppConnection);
}
