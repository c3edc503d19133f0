/**
 * `iotgw-lorawan-devices` (endpoint 8): lists the LoRaWAN device inventory. One page, or
 * every page in turn until the service says `last`: each page is sent on as its own msg
 * with `msg.parts` (type array), so a join node in automatic mode merges them, and the
 * node never holds more than one page. The page arrives wrapped in a one-element array
 * (as documented) or bare; both are accepted. Session keys (`nwkskey`, `appskey`) are
 * removed from every device unless `includeKeys` is ticked.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { GatewayError, badInput } from '../lib/common/errors';
import { handleInput, isPlainObject, mergeQuery, useConfigNode, type Msg } from '../lib/node-red/node-kit';
import { migrateListConfig, pagesMode, servicePage } from '../lib/api/list-paging';
import { PATHS, brokerRequest, checkDevEui, checkView, defined, devicePageOf, devicePageReplyCheck, optionalInt, paramName, redactDevice, say, withOverrides, type DevicePage } from '../lib/api/broker';
import { checkReply } from '../lib/api/terminal';
import { isGateway } from '../lib/node-red/guards';

export interface DevicesConfig extends NodeDef {
  gateway: string;
  customerId?: string | number;
  devEui?: string;
  /** "" (not sent), "true" (receivable view) or "false" (payable view). */
  receivable?: string | boolean;
  /** 'one' page or 'all' pages in turn (list vocabulary, src/lib/api/list-paging.ts). */
  pages?: 'one' | 'all';
  /** 1-based. */
  page?: string | number;
  pageSize?: string | number;
  /** The number the service gives its first page: 1 (default) or 0 (a zero-based service). */
  firstPage?: string | number;
  /** Before `pages`: true for every page (read by the migration). */
  allPages?: boolean;
  includeKeys?: boolean;
  pageParam?: string;
  pageSizeParam?: string;
}

const OVERRIDES = ['customerId', 'devEui', 'receivable', 'pages', 'page', 'pageSize', 'allPages'] as const;
/** The list vocabulary's overrides at the top of the msg (msg.page only as a number: an object there is a page envelope). */
const MSG_OVERRIDES = ['pages', 'page', 'pageSize'] as const;

interface Request {
  filters: Record<string, string | number | boolean | undefined>;
  page: number;
  pageSize: number;
  allPages: boolean;
}

/**
 * Filters and paging: settings, overridden by msg.pages / msg.page / msg.pageSize, overridden
 * by the same names in msg.payload (a plain object; `allPages` there too, as before).
 */
export function readRequest(rawConfig: DevicesConfig, payload: unknown, msg?: Record<string, unknown>): Request {
  const config: Record<string, unknown> = { ...migrateListConfig(rawConfig) };
  const fromMsg = new Set<string>();
  for (const k of MSG_OVERRIDES) {
    const v = msg?.[k];
    if (v === undefined || v === null || (k === 'page' && typeof v === 'object')) continue;
    config[k] = v;
    fromMsg.add(k);
  }
  const { src, where: inPayload } = withOverrides(config, payload, OVERRIDES);
  const where = (k: string) => (fromMsg.has(k) && inPayload(k) === k ? `msg.${k}` : inPayload(k));
  if (src.allPages !== undefined && typeof src.allPages !== 'boolean') throw badInput(where('allPages'), 'must be true or false');
  const pages = isPlainObject(payload) && 'pages' in payload ? pagesMode(src.pages, where('pages')) : src.allPages !== undefined ? (src.allPages ? 'all' : 'one') : pagesMode(src.pages, where('pages'));
  const firstPage = optionalInt(config.firstPage, 'firstPage', 0, 1) ?? 1;
  return {
    filters: {
      customerId: optionalInt(src.customerId, where('customerId'), 1),
      devEui: checkDevEui(src.devEui, where('devEui')),
      receivable: checkView(src.receivable, where('receivable')),
    },
    page: servicePage(optionalInt(src.page, where('page'), 1) ?? 1, firstPage),
    pageSize: optionalInt(src.pageSize, where('pageSize'), 1, 100000) ?? 100,
    allPages: pages === 'all',
  };
}

/** What msg.page carries: the page envelope without its content. */
function pageInfo(p: DevicePage): Record<string, unknown> {
  const info: Record<string, unknown> = { ...p };
  delete info.content;
  return info;
}

/** The page number a reply gives (number, or pageable.pageNumber), if any. */
function pageNumberOf(p: DevicePage): number | undefined {
  return p.number ?? (typeof p.pageable === 'object' ? p.pageable?.pageNumber : undefined) ?? undefined;
}

/** A page that is not the one after `previous` means the service ignored our page parameter. */
function checkPageOrder(where: string, previous: number | undefined, number: unknown, pageParam: string): void {
  if (previous !== undefined && typeof number === 'number' && number !== previous + 1) {
    throw new GatewayError(
      'BAD_RESPONSE',
      `${where}: asked for the page after ${previous} and got page ${number}; does the service name the page parameter "${pageParam}"? Set the page parameter name in the node`,
    );
  }
}

/** One walk over the pages: its msg.parts id, the count announced by the first page, the page before. */
interface Walk {
  partsId: string;
  outerParts: unknown;
  announced?: number;
  previous?: number;
}

/** msg.parts of page `index` of a walk, and msg.complete when the walk ends before the count announced. */
function setParts(RED: NodeAPI, node: Node, out: Msg, walk: Walk, p: DevicePage, index: number, last: boolean, pageSize: number): void {
  const number = pageNumberOf(p);
  if (index === 0 && typeof p.totalPages === 'number') walk.announced = Math.max(1, p.totalPages - (typeof number === 'number' ? number : 0));
  const announced = walk.announced;
  // len > 1 tells the join node to concatenate the page arrays into one array.
  const parts: { id: string; index: number; type: string; len: number; count?: number; parts?: unknown } = { id: walk.partsId, index, type: 'array', len: Math.max(2, p.size ?? pageSize) };
  if (announced !== undefined) parts.count = announced;
  if (walk.outerParts !== undefined) parts.parts = walk.outerParts;
  out.parts = parts as unknown as Msg['parts'];
  // The inventory changed while walking (or no total was given): end the sequence here.
  if (last && announced !== index + 1) {
    parts.count = index + 1;
    out.complete = true;
  }
  node.status({ fill: 'blue', shape: 'dot', text: say(RED, 'iotgw-lorawan-devices.status.page', `page ${index + 1} of ${announced ?? '?'}`, { page: index + 1, count: announced ?? '?' }) });
}

function startLorawanDevices(RED: NodeAPI, node: Node, config: DevicesConfig): void {
  const gw = useConfigNode(RED, node, config.gateway, isGateway, 'gateway', 'iotgw-gateway');
  const includeKeys = config.includeKeys === true;

  handleInput(RED, node, async (msg: Msg, send, { signal }) => {
    if (gw instanceof GatewayError) throw gw;
    const pageParam = paramName(config.pageParam, 'page', 'pageParam');
    const sizeParam = paramName(config.pageSizeParam, 'pageSize', 'pageSizeParam');
    const req = readRequest(config, msg.payload, msg);
    mergeQuery({}, msg.query); // refuse a bad msg.query before any request
    const where = `GET ${PATHS.devices}`;
    const rest: Msg = { ...msg };
    delete rest.payload;
    const walk: Walk = { partsId: RED.util.generateId(), outerParts: rest.parts };
    for (let index = 0, page = req.page; ; index++, page++) {
      signal.throwIfAborted();
      const query = mergeQuery({ ...defined(req.filters), [pageParam]: page, [sizeParam]: req.pageSize }, msg.query);
      const res = await brokerRequest(gw, { method: 'GET', path: PATHS.devices, query, idempotent: true, signal });
      // Checked as devicePageReply checks it; the reply itself is sent on (no copy of every device).
      const p = devicePageOf(checkReply<DevicePage | [DevicePage]>(devicePageReplyCheck, res.body, where));
      const number = pageNumberOf(p);
      checkPageOrder(where, walk.previous, number, pageParam);
      walk.previous = typeof number === 'number' ? number : undefined;
      // The end is what the service says (`last`, `empty`) or an empty page; never page arithmetic.
      const last = !req.allPages || p.last === true || p.empty === true || p.content.length === 0;
      const out: Msg = last ? msg : (RED.util.cloneMessage(rest) as Msg);
      out.payload = includeKeys ? p.content : p.content.map(redactDevice);
      out.page = pageInfo(p);
      out.statusCode = res.statusCode;
      if (req.allPages) setParts(RED, node, out, walk, p, index, last, req.pageSize);
      send(out);
      if (last) return;
    }
  });
}

export default function register(RED: NodeAPI): void {
  function IotgwLorawanDevicesNode(this: Node, config: DevicesConfig) {
    RED.nodes.createNode(this, config);
    startLorawanDevices(RED, this, config);
  }

  RED.nodes.registerType('iotgw-lorawan-devices', IotgwLorawanDevicesNode as unknown as (this: Node, c: NodeDef) => void);
}
