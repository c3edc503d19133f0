/**
 * The admin route of the iotgw-redis dialog, registered at start by the registrar
 * (scripts/registrar.js): GET /iotgw-redis/:id/master, which node is master now
 * (credential-free: host:port only). A node not deployed, or not yet connected, has none.
 */
import type { NodeAPI } from 'node-red';
import type { RedisConfigNode } from './iotgw-redis';

interface AdminRequest {
  params: { id?: string };
}
interface AdminResponse {
  json: (v: unknown) => void;
}
interface AdminApi {
  httpAdmin: { get: (path: string, ...handlers: unknown[]) => void };
  auth: { needsPermission: (permission: string) => unknown };
}

export function routes(RED: NodeAPI): void {
  const { httpAdmin, auth } = RED as unknown as Partial<AdminApi>;
  // A runtime without an admin API (httpAdminRoot: false) has no editor to ask.
  if (!httpAdmin || !auth) return;
  httpAdmin.get('/iotgw-redis/:id/master', auth.needsPermission('iotgw-redis.read'), (req: AdminRequest, res: AdminResponse) => {
    const n = RED.nodes.getNode(String(req.params.id)) as RedisConfigNode | null;
    if (!n || typeof n.master !== 'function') return void res.json({ deployed: false, master: null });
    res.json({ deployed: true, mode: n.settings.mode ?? 'standalone', master: n.master() ?? null });
  });
}
