/**
 * The admin route behind a config dialog's "test connection" button (issue 26), shared by
 * the node files' `*.routes.ts`: POST `path` for users with `permission`, the JSON body
 * handed to the node's own test with the caller beside it (the route's node type, and
 * whether the user may deploy: issue 34). One test at a time per user, over both routes:
 * a second one while the first runs is answered 429. Loaded at start with the routes
 * files: it imports nothing heavy, and the node's module (with the HTTP client) is
 * required by the first request.
 */
import type { NodeAPI } from 'node-red';
import type { TestConnectionResult } from './test-connection';
import { CALLER, type TestCaller } from './test-caller';

interface AdminRequest {
  body?: unknown;
  user?: { username?: unknown; permissions?: unknown };
  authInfo?: { scope?: unknown };
}
interface AdminResponse {
  json: (v: unknown) => void;
  status: (code: number) => AdminResponse;
}
interface AdminApi {
  httpAdmin: { post: (path: string, ...handlers: unknown[]) => void };
  auth: { needsPermission: (permission: string) => unknown };
}

/** The node's test: the runtime and the dialog's values (an object, maybe empty) with the caller. */
export type ConnectionTester<Req> = (RED: NodeAPI, body: Req) => Promise<TestConnectionResult>;

/** The users with a test running now (both routes: one module). */
const running = new Set<string>();
/** A test that has not answered by then is answered TIMEOUT and its user may test again (the tests themselves stop at 15 s). */
const TEST_DEADLINE_MS = 45_000;

/** Does Node-RED's permission scope `scope` (a string or a list) grant `permission`? As Node-RED's own check. */
export function scopeGrants(scope: unknown, permission: string): boolean {
  if (Array.isArray(scope)) return scope.some((s) => scopeGrants(s, permission));
  if (scope === '*' || scope === permission) return true;
  const verb = permission.slice(permission.lastIndexOf('.') + 1);
  return (scope === verb || scope === `*.${verb}`) && (verb === 'read' || verb === 'write');
}

/** May the user of `req` deploy? Without adminAuth everyone may; with it, the user's scope says. */
function mayDeploy(RED: NodeAPI, req: AdminRequest): boolean {
  if (!req.user) return !(RED.settings as unknown as { adminAuth?: unknown }).adminAuth;
  return scopeGrants(req.authInfo?.scope ?? req.user.permissions, 'flows.write');
}

/** Registers POST `path` (permission `permission`) answering `load()`'s test of the posted values for node type `type`. */
export function testConnectionRoute<Req>(RED: NodeAPI, path: string, type: string, permission: string, load: () => ConnectionTester<Req>): void {
  const { httpAdmin, auth } = RED as unknown as Partial<AdminApi>;
  // A runtime without an admin API (httpAdminRoot: false) has no editor to ask.
  if (!httpAdmin || !auth) return;
  httpAdmin.post(path, auth.needsPermission(permission), (req: AdminRequest, res: AdminResponse) => {
    const user = typeof req.user?.username === 'string' ? `user:${req.user.username}` : 'anonymous';
    if (running.has(user)) {
      res.status(429).json({ ok: false, code: 'RATE_LIMITED', message: 'another test connection of yours is still running: wait for its answer, then test again', ms: 0 });
      return;
    }
    running.add(user);
    const posted = req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? req.body : {};
    const caller: TestCaller = { type, mayDeploy: mayDeploy(RED, req) };
    const body = { ...posted, [CALLER]: caller } as Req;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<TestConnectionResult>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, code: 'TIMEOUT', message: `the test did not answer within ${TEST_DEADLINE_MS / 1000} s`, ms: TEST_DEADLINE_MS }), TEST_DEADLINE_MS);
    });
    const internal = () => ({ ok: false, code: 'INTERNAL', message: 'the test failed inside the runtime (a defect of the node, please report it)', ms: 0 });
    let test: Promise<TestConnectionResult>;
    try {
      test = load()(RED, body);
    } catch {
      test = Promise.reject(new Error('test not loaded'));
    }
    void Promise.race([test, deadline])
      .then(
        (r) => res.json(r),
        () => res.status(500).json(internal()),
      )
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(timer);
        running.delete(user);
      });
  });
}
