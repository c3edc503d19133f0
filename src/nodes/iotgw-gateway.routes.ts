/**
 * The admin route of the gateway dialog's "test connection" button (issue 26), registered
 * at start by the registrar (scripts/registrar.js): POST /iotgw/test-connection, for users
 * allowed to edit gateway config nodes. Nothing heavy at the top: the node's module (and
 * the HTTP client) is required by the first request.
 */
import type { NodeAPI } from 'node-red';
import type { TestConnectionRequest } from './iotgw-gateway';

interface AdminRequest {
  body?: unknown;
}
interface AdminResponse {
  json: (v: unknown) => void;
  status: (code: number) => AdminResponse;
}
interface AdminApi {
  httpAdmin: { post: (path: string, ...handlers: unknown[]) => void };
  auth: { needsPermission: (permission: string) => unknown };
}

export function routes(RED: NodeAPI): void {
  const { httpAdmin, auth } = RED as unknown as Partial<AdminApi>;
  // A runtime without an admin API (httpAdminRoot: false) has no editor to ask.
  if (!httpAdmin || !auth) return;
  httpAdmin.post('/iotgw/test-connection', auth.needsPermission('iotgw-gateway.write'), (req: AdminRequest, res: AdminResponse) => {
    const body = (req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? req.body : {}) as TestConnectionRequest;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { testConnection } = require('./iotgw-gateway') as typeof import('./iotgw-gateway');
    testConnection(RED, body).then(
      (r) => res.json(r),
      () => res.status(500).json({ ok: false, code: 'NETWORK', message: 'the test failed inside the runtime', ms: 0 }),
    );
  });
}
