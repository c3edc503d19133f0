/**
 * `iotgw-terminals` (issue 35): the terminal inventory. An empty msg.payload lists every
 * terminal, page after page by keyset (`SinceID`), each page a msg of its own with
 * `msg.parts` so a join node merges them; the node holds at most the page at hand and the
 * one before it (a page is sent once the next one shows it was not the last, so the last
 * carries `msg.parts.count`), and the empty page that ends the list sends no msg unless
 * there is no terminal at all. `pages: one` (or `{sinceId, pageSize}` in msg.payload)
 * sends one page with `msg.nextSinceId`; a PrimeID string sends that terminal.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput } from '../lib/common/errors';
import { describeType } from '../lib/common/int64';
import { handleInput, isPlainObject, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { pagesMode } from '../lib/api/list-paging';
import { checkMaxPages, checkPageSize, checkPrimeId, getTerminal, getTerminalsPage, walkTerminals, type TerminalPage } from '../lib/api/terminal-inventory';
import { say } from '../lib/api/broker';
import { isGateway } from '../lib/node-red/guards';
import type { GatewayNode } from '../lib/node-red/config-nodes';
import type { Query } from '../lib/transport/http';

export interface TerminalsConfig extends NodeDef {
  gateway: string;
  /** 'all' (default): every page in turn; 'one': the first page. */
  pages?: 'one' | 'all' | '';
  /** 1..1000, default 1000. */
  pageSize?: string | number;
  /** Pages one walk of every page reads at most (1..1,000,000; absent in older flows: 1000). */
  maxPages?: string | number;
}

type Request = { kind: 'terminal'; primeId: string } | { kind: 'page'; sinceId?: string; pageSize: number } | { kind: 'all'; pageSize: number; maxPages: number };

const empty = (v: unknown) => v === undefined || v === null || v === '';

/** What the msg asks for: one terminal, one page, or every page. */
export function readTerminalsRequest(config: TerminalsConfig, msg: Record<string, unknown>): Request {
  const p = msg.payload;
  if (typeof p === 'string' && p.trim() !== '') return { kind: 'terminal', primeId: checkPrimeId(p, 'msg.payload') };
  const size = checkPageSize(empty(msg.pageSize) ? config.pageSize : msg.pageSize, empty(msg.pageSize) ? 'pageSize' : 'msg.pageSize');
  if (isPlainObject(p)) {
    for (const k of Object.keys(p)) if (k !== 'sinceId' && k !== 'pageSize') throw badInput(`msg.payload.${k}`, 'unknown field; a page is asked for with {sinceId, pageSize}');
    const sinceId = empty(p.sinceId) ? undefined : checkPrimeId(p.sinceId, 'msg.payload.sinceId');
    return { kind: 'page', sinceId, pageSize: empty(p.pageSize) ? size : checkPageSize(p.pageSize, 'msg.payload.pageSize') };
  }
  if (!empty(p)) throw badInput('msg.payload', `must be empty (every terminal), a PrimeID as text, or {sinceId, pageSize}, not ${describeType(p)}`);
  const pages = pagesMode(empty(msg.pages) ? config.pages : msg.pages, empty(msg.pages) ? 'pages' : 'msg.pages') ?? 'all';
  return pages === 'all' ? { kind: 'all', pageSize: size, maxPages: checkMaxPages(config.maxPages, 'maxPages') } : { kind: 'page', pageSize: size };
}

/** Every page in turn; a page goes out once the next one is known, so the last carries the count. */
async function sendAllPages(RED: NodeAPI, node: Node, gw: GatewayNode, msg: Msg, req: { pageSize: number; maxPages: number }, query: Query, signal: AbortSignal, send: (m: Msg) => void): Promise<void> {
  const { pageSize } = req;
  const rest: Msg = { ...msg };
  delete rest.payload;
  const id = RED.util.generateId();
  const out = (page: TerminalPage, index: number, last: boolean) => {
    const m: Msg = last ? msg : (RED.util.cloneMessage(rest) as Msg);
    m.payload = page.terminals;
    m.statusCode = page.statusCode;
    // len > 1 tells the join node to concatenate the page arrays into one array.
    const parts: Record<string, unknown> = { id, index, type: 'array', len: Math.max(2, pageSize) };
    if (last) parts.count = index + 1;
    if (rest.parts !== undefined) parts.parts = rest.parts;
    m.parts = parts as unknown as Msg['parts'];
    send(m);
  };
  let held: TerminalPage | undefined;
  let index = 0;
  const status = () => node.status({ fill: 'blue', shape: 'dot', text: say(RED, 'iotgw-terminals.status.page', `page ${index + 1}`, { page: index + 1 }) });
  status();
  // A walk always ends: pages out of order, going round, or past maxPages are BAD_RESPONSE.
  for await (const page of walkTerminals(gw, pageSize, req.maxPages, { query, signal })) {
    signal.throwIfAborted();
    if (page.terminals.length === 0) {
      // The empty page ends the list: it sends nothing of its own, unless there is no terminal at all.
      out(held ?? page, held ? index - 1 : 0, true);
      return;
    }
    if (held) out(held, index - 1, false);
    held = page;
    index++;
    status();
  }
}

/**
 * The query parameters the node sets itself: `msg.query` may add others, never these (a `SinceID`
 * of its own made every page of a walk ask for the same page; issue 43). Any case.
 */
const OWN_PARAMS = ['SinceID', 'PageSize', 'PrimeID'];

/** `msg.query`, checked: BAD_INPUT naming a parameter the node sets itself. */
function walkQuery(q: unknown): Query {
  const query = mergeQuery({}, q);
  for (const k of Object.keys(query)) {
    const own = OWN_PARAMS.find((p) => p.toLowerCase() === k.toLowerCase());
    if (own) throw badInput(`msg.query.${k}`, `${own} is set by the node: give {sinceId, pageSize} or a PrimeID in msg.payload (or msg.pageSize), not in msg.query`);
  }
  return query;
}

function startTerminals(RED: NodeAPI, node: Node, config: TerminalsConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  handleInput(RED, node, async (msg: Msg, send, { signal }) => {
    if (gw instanceof GatewayError) throw gw;
    const req = readTerminalsRequest(config, msg);
    const query = walkQuery(msg.query);
    if (req.kind === 'terminal') {
      const { terminal, statusCode } = await getTerminal(gw, req.primeId, { query, signal });
      send(Object.assign(msg, { payload: terminal, statusCode }));
    } else if (req.kind === 'page') {
      const page = await getTerminalsPage(gw, req.sinceId, req.pageSize, { query, signal });
      send(Object.assign(msg, { payload: page.terminals, nextSinceId: page.terminals.length ? page.nextSinceId : null, statusCode: page.statusCode }));
    } else {
      await sendAllPages(RED, node, gw, msg, req, query, signal, send);
    }
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwTerminalsNode(this: Node, config: TerminalsConfig) {
    RED.nodes.createNode(this, config);
    startTerminals(RED, this, config);
  }

  RED.nodes.registerType('iotgw-terminals', IotgwTerminalsNode as unknown as (this: Node, c: NodeDef) => void);
}
