/**
 * The admin route behind a config dialog's "test connection" button (issue 26), shared by
 * the node files' `*.routes.ts`: POST `path` for users with `permission`, the JSON body
 * handed to the node's own test. Loaded at start with the routes files: it imports
 * nothing, and the node's module (with the HTTP client) is required by the first request.
 */
import type { NodeAPI } from 'node-red';
import type { TestConnectionResult } from './test-connection';

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

/** The node's test: the runtime and the dialog's values (an object, maybe empty). */
export type ConnectionTester<Req> = (RED: NodeAPI, body: Req) => Promise<TestConnectionResult>;

/** Registers POST `path` (permission `permission`) answering `load()`'s test of the posted values. */
export function testConnectionRoute<Req>(RED: NodeAPI, path: string, permission: string, load: () => ConnectionTester<Req>): void {
  const { httpAdmin, auth } = RED as unknown as Partial<AdminApi>;
  // A runtime without an admin API (httpAdminRoot: false) has no editor to ask.
  if (!httpAdmin || !auth) return;
  httpAdmin.post(path, auth.needsPermission(permission), (req: AdminRequest, res: AdminResponse) => {
    const body = (req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? req.body : {}) as Req;
    const failed = () => res.status(500).json({ ok: false, code: 'NETWORK', message: 'the test failed inside the runtime', ms: 0 });
    try {
      load()(RED, body).then((r) => res.json(r), failed);
    } catch {
      failed();
    }
  });
}
