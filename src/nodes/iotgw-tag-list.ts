/**
 * `iotgw-tag-list` (endpoint 10): the tags of a customer. One page (the page envelope as
 * the API returns it), or every page in turn following `nextPage` until it is null, each
 * page its own msg with `msg.parts`, so a join node in automatic mode merges them into
 * one array. Pages are sent as they arrive: no page is held once it is sent.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError } from '../lib/common/errors';
import { evalProperty, handleInput, mergeQuery, numberSetting, useConfigNode, type Msg, type SendFn } from '../lib/node-red/node-kit';
import { parseReply } from '../lib/api/terminal';
import { APP_PARAMS, APP_PATHS, TAG_PAGING, pagingNumber, queryValue, tagPage } from '../lib/api/app';
import type { Query } from '../lib/transport/http';
import { isApp } from '../lib/node-red/guards';
import type { AppNode } from '../lib/node-red/config-nodes';
import { migrateListConfig, pagesMode } from '../lib/api/list-paging';

export interface TagListConfig extends NodeDef {
  app: string;
  /** 'one' page or 'all' pages in turn from the first one asked for (list vocabulary, src/lib/api/list-paging.ts). */
  pages?: 'one' | 'all';
  /** Paging settings; '' = from msg.page / msg.pageSize / msg.offset, else not sent. */
  page?: string | number;
  pageSize?: string | number;
  /** Before `pages` / `pageSize` (read by the migration). */
  walk?: 'page' | 'all';
  perPage?: string | number;
  offset?: string | number;
  /** The customer's token-like string (TypedInput). */
  token?: string;
  tokenType?: string;
  /** Filter (TypedInput). */
  search?: string;
  searchType?: string;
  /** Safety stop for a walk. */
  maxPages?: string | number;
}

const LIMITS = TAG_PAGING;

/** A text of the node's locale, or `fallback` when the key is missing. */
function text(RED: NodeAPI, key: string, vars: Record<string, string | number>, fallback: string): string {
  const out = RED._(`iotgw-tag-list.${key}`, vars);
  return out.endsWith(key) ? fallback : out;
}

/** A paging value: the setting when given, else the msg's, warning when they differ. */
function paging(RED: NodeAPI, node: Node, config: TagListConfig, name: keyof typeof LIMITS, msg: Msg): number | undefined {
  const { min, max } = LIMITS[name];
  // msg.perPage: the old name of msg.pageSize.
  const prop = name === 'pageSize' && msg.pageSize === undefined && msg.perPage !== undefined ? 'perPage' : name;
  const fromSetting = pagingNumber(config[name], name, min, max);
  const fromMsg = pagingNumber(msg[prop], `msg.${prop}`, min, max);
  if (fromSetting !== undefined && fromMsg !== undefined && fromSetting !== fromMsg) {
    node.warn(text(RED, 'warn.override', { prop, value: fromSetting }, `msg.${prop} ignored: the node's setting (${fromSetting}) wins; clear the setting to take it from the msg`));
  }
  return fromSetting ?? fromMsg;
}

type Paging = Record<keyof typeof LIMITS, number | undefined>;

/** The query of the first page asked for. */
async function tagQuery(RED: NodeAPI, node: Node, config: TagListConfig, msg: Msg, { page, pageSize: perPage, offset }: Paging): Promise<Query> {
  const token = queryValue(await evalProperty(RED, node, config.token, config.tokenType, msg), 'token');
  const search = queryValue(await evalProperty(RED, node, config.search, config.searchType, msg), 'search');
  const base: Query = {
    [APP_PARAMS.token]: token,
    [APP_PARAMS.page]: page,
    [APP_PARAMS.perPage]: perPage,
    [APP_PARAMS.offset]: offset,
    [APP_PARAMS.search]: search,
  };
  return mergeQuery(base, msg.query);
}

/** The page after `current`, or null after the last: nextPage null, or an empty page. */
function nextPage(body: { items: unknown[]; nextPage?: number | null }, current: number, index: number, where: string): number | null {
  // A reply without nextPage at all goes on to the following page until one comes back empty.
  const next = body.items.length === 0 ? null : body.nextPage === undefined ? current + 1 : body.nextPage;
  if (next !== null && next <= current) {
    throw new GatewayError('BAD_RESPONSE', `${where}: nextPage ${next} does not come after curPage ${current}; stopped after ${index + 1} pages`);
  }
  return next;
}

/** msg.parts of page `index`: a join node in automatic mode merges the pages into one array. */
function pageParts(partsId: string, index: number, len: number, last: boolean, outerParts: unknown): Msg['parts'] {
  const parts: { id: string; index: number; type: string; len: number; count?: number; parts?: unknown } = {
    id: partsId,
    index,
    type: 'array',
    // A join node concatenates the page arrays only when len > 1.
    len: Math.max(2, len),
  };
  if (last) parts.count = index + 1;
  if (outerParts !== undefined) parts.parts = outerParts;
  return parts as Msg['parts'];
}

interface Walk {
  RED: NodeAPI;
  node: Node;
  app: AppNode;
  maxPages: number;
  send: SendFn;
  signal: AbortSignal;
}

/** Every page in turn, each its own msg, sent as it arrives. */
async function walkPages(w: Walk, msg: Msg, query: Query, perPage: number | undefined): Promise<void> {
  const { RED, node, app, maxPages, signal } = w;
  const where = `GET ${APP_PATHS.tags}`;
  // A clone of the input is taken before anything is changed, so each page's msg
  // carries the input's other properties and nothing of other pages.
  const input = RED.util.cloneMessage(msg);
  const partsId = RED.util.generateId();
  const outerParts = msg.parts;
  let requested = Number(query[APP_PARAMS.page] ?? 1);
  for (let index = 0; ; index++) {
    if (signal.aborted) throw signal.reason;
    node.status({ fill: 'blue', shape: 'dot', text: text(RED, 'status.page', { page: index + 1 }, `page ${index + 1}`) });
    const res = await app.get(APP_PATHS.tags, query, signal);
    const body = parseReply(tagPage, res.body, where);
    const { items, ...envelope } = body;
    const next = nextPage(body, body.curPage ?? requested, index, where);
    const last = next === null;
    const out = last ? msg : RED.util.cloneMessage(input);
    out.payload = items;
    out.paging = envelope;
    out.statusCode = res.statusCode;
    out.parts = pageParts(partsId, index, body.perPage ?? perPage ?? items.length, last, outerParts);
    w.send(out);
    if (last) return;
    if (index + 1 >= maxPages) {
      throw new GatewayError('BAD_RESPONSE', `${where}: more than ${maxPages} pages; stopped after ${maxPages} (raise "Max pages" or narrow the search)`);
    }
    requested = next;
    query[APP_PARAMS.page] = next;
  }
}

function startTagList(RED: NodeAPI, node: Node, rawConfig: TagListConfig): void {
  const config = migrateListConfig(rawConfig);
  const app = useConfigNode(RED, node, config.app, isApp, 'app', 'iotgw-app');
  const maxPages = Math.round(numberSetting(config.maxPages, 1000, 1, 1_000_000));
  handleInput(RED, node, async (msg: Msg, send, ctx) => {
    if (app instanceof GatewayError) throw app;
    const walkAll = (pagesMode(msg.pages, 'msg.pages') ?? config.pages) === 'all';
    const p: Paging = { page: paging(RED, node, config, 'page', msg), pageSize: paging(RED, node, config, 'pageSize', msg), offset: paging(RED, node, config, 'offset', msg) };
    const query = await tagQuery(RED, node, config, msg, p);
    if (walkAll) return walkPages({ RED, node, app, maxPages, send, signal: ctx.signal }, msg, query, p.pageSize);
    const res = await app.get(APP_PATHS.tags, query, ctx.signal);
    msg.payload = parseReply(tagPage, res.body, `GET ${APP_PATHS.tags}`);
    msg.statusCode = res.statusCode;
    send(msg);
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwTagListNode(this: Node, rawConfig: TagListConfig) {
    RED.nodes.createNode(this, rawConfig);
    startTagList(RED, this, rawConfig);
  }

  RED.nodes.registerType('iotgw-tag-list', IotgwTagListNode as unknown as (this: Node, c: NodeDef) => void);
}
