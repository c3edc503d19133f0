/**
 * The terminals' own data (real-services.md, "From-mobile messages and general to-mobile
 * messages"), hooked into the terminal gateway:
 *
 * - `POST submit/messages` (throttle group SEND): general to-mobile messages, at most
 *   `maxBatch` per call, each with `RawPayload` (base64; first two bytes SIN and MIN) or
 *   `Payload` (common message format). Accepted ones become to-mobile messages of the
 *   gateway, with the same status records as mode messages.
 * - `GET get/re_messages?FromUTC=...` (throttle group GET, shared with status updates):
 *   from-mobile messages with the strict FromUTC rules: inclusive, one-second resolution,
 *   oldest first, at most `maxMessages` per reply, `NextFromUTC` = the second of the last
 *   message returned (so that second comes again), an empty reply keeps `NextFromUTC`
 *   empty (null). A second may hold more messages than a reply; a message may become
 *   visible late, in a second that was already read.
 * - Terminals that report: every online terminal sends a position report (SIN 128 MIN 1)
 *   and a sensor report (SIN 128 MIN 2) every `reportEveryMs` (0 = off, the default of the
 *   library; the CLI and `npm start` turn it on), each with `Payload` fields and the
 *   matching `RawPayload`; and a SatelliteTelemetry report (SIN 255 MIN 1 of
 *   examples/definitions/demo.idpmsg) with `RawPayload` only, as the real gateway sends
 *   a message whose definitions it does not hold (decode it with an iotgw-definitions node).
 * - `POST /_sim/from-mobile` seeds messages for tests: `{count, perSecond, startSec,
 *   lateCount, lateAfterMs, mobileId, kind}` (kind `reports`, the default, or `telemetry`).
 */
import type { SimServer, SimReply, SimRequest } from './server';
import { json } from './server';
import { checkGeneralMessage, payloadOf } from './message-checks';
import { DEFAULT_FEED_PAGING, FeedLog, formatUtc as utc, pageFeed, parseUtc as parseSec } from './feed';

/** A terminal as this area sees it (the terminal gateway's own record fits). */
export interface Terminal {
  id: string;
  family: 'IDP' | 'OGx';
  online: boolean;
  account: string;
  /** A fleet terminal: it reports through the fleet's demo (fleet-demo.ts), not here. */
  fleet?: boolean;
}

/**
 * What this area needs of the terminal gateway it is mounted on. An interface rather than an
 * import of TerminalGateway, which imports this file: no import circle in the simulator.
 */
export interface TerminalHost {
  now: () => number;
  terminals: Map<string, Terminal>;
  options: { acceptUnknownTerminals: boolean };
  addTerminal(t: { id: string }): Terminal;
  acceptMessage(term: Terminal, payload?: { RawPayload?: string; Payload?: unknown }): bigint;
  /** The request's JSON array, or the 415/400 reply the gateway gives instead. */
  jsonArray(r: SimRequest): unknown[] | SimReply;
  guard(r: SimRequest, group: 'SEND' | 'GET' | 'INFO' | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly?: boolean): Promise<SimReply>;
}
import type { CmfField } from '../lib/api/cmf';

export interface MobileOptions {
  /** Most from-mobile messages in one get/re_messages reply. */
  maxMessages: number;
  /** Most general messages in one submit/messages call. */
  maxBatch: number;
  /** Largest RawPayload in bytes (OGx: 1,023). */
  maxRawBytes: number;
  /** Each online terminal reports every this many ms; 0 = off. */
  reportEveryMs: number;
  /** An empty reply's NextFromUTC: null (default) or "" (both seen on the real service). */
  emptyNext: 'null' | 'empty' | 'from';
  /** Leave out RawPayload (or Payload) of generated messages ("either may be missing"). */
  omit: 'none' | 'raw' | 'payload';
}

export const DEFAULT_MOBILE_OPTIONS: MobileOptions = {
  maxMessages: 500,
  maxBatch: 100,
  maxRawBytes: 1023,
  reportEveryMs: 0,
  emptyNext: 'null',
  omit: 'none',
};

export interface FromMobile {
  /** ReceiveUTC second. */
  sec: number;
  /** Visible to get/re_messages from this time (ms); a late arrival is later than its second. */
  visibleAt: number;
  ID: bigint;
  MobileID: string;
  account: string;
  SIN: number;
  MIN: number;
  name: string;
  fields: CmfField[];
  raw: Buffer;
  region: string;
  transport: number;
  /** Sent with RawPayload only (no Payload): a message the gateway holds no definitions for. */
  rawOnly?: boolean;
}

const ERR = { INVALID_DESTINATION: 101, TOO_MANY_MESSAGES: 104, INVALID_REQUEST: 105, INVALID_FROM_UTC: 108 };

/** A position report: the CMF fields and the bytes they come from. */
export function positionReport(lat: number, lon: number, speed: number, heading: number, fix: 'Valid' | 'Invalid'): { fields: CmfField[]; raw: Buffer } {
  const raw = Buffer.alloc(2 + 4 + 4 + 1 + 2 + 1);
  raw.writeUInt8(128, 0);
  raw.writeUInt8(1, 1);
  raw.writeInt32BE(lat, 2);
  raw.writeInt32BE(lon, 6);
  raw.writeUInt8(speed, 10);
  raw.writeUInt16BE(heading, 11);
  raw.writeUInt8(fix === 'Valid' ? 1 : 0, 13);
  return {
    raw,
    fields: [
      { Name: 'latitude', Type: 'signedint', Value: String(lat) },
      { Name: 'longitude', Type: 'signedint', Value: String(lon) },
      { Name: 'speed', Type: 'unsignedint', Value: String(speed) },
      { Name: 'heading', Type: 'unsignedint', Value: String(heading) },
      { Name: 'fixStatus', Type: 'enum', Value: fix },
    ],
  };
}

/** A sensor report with every CMF type: ints, enum, boolean, string, data, array, nested message. */
export function sensorReport(temps: number[], battery: number, door: boolean, label: string, blob: Buffer): { fields: CmfField[]; raw: Buffer } {
  const lab = Buffer.from(label, 'utf8').subarray(0, 255);
  const raw = Buffer.concat([
    Buffer.from([128, 2, battery & 0xff, door ? 1 : 0, temps.length]),
    Buffer.from(temps.flatMap((t) => [(t >> 8) & 0xff, t & 0xff])),
    Buffer.from([lab.length]),
    lab,
    Buffer.from([blob.length]),
    blob,
  ]);
  return {
    raw,
    fields: [
      { Name: 'battery', Type: 'unsignedint', Value: String(battery) },
      { Name: 'doorOpen', Type: 'boolean', Value: door ? 'True' : 'False' },
      { Name: 'mode', Type: 'enum', Value: door ? 'Alarm' : 'Normal' },
      { Name: 'label', Type: 'string', Value: label },
      { Name: 'blob', Type: 'data', Value: blob.toString('base64') },
      { Name: 'temperatures', Type: 'array', Elements: temps.map((t, i) => ({ Index: i, Fields: [{ Name: 'celsius', Type: 'signedint', Value: String(t) }] })) },
      {
        Name: 'diagnostics',
        Type: 'message',
        Message: { Name: 'diag', SIN: 128, MIN: 3, IsForward: false, Fields: [{ Name: 'resets', Type: 'unsignedint', Value: '0' }, { Name: 'ok', Type: 'boolean', Value: 'True' }] },
      },
    ],
  };
}

/** SatelliteTelemetry's fields in bit order: [name, bits, signed] (examples/definitions/demo.idpmsg). */
export const TELEMETRY_LAYOUT: ReadonlyArray<readonly [string, number, boolean]> = [
  ['timestamp', 31, false],
  ['latitude', 24, true],
  ['longitude', 25, true],
  ['altitude', 13, true],
  ['speed', 8, false],
  ['heading', 9, false],
  ['satellites', 4, false],
  ['pdop', 5, false],
  ['snr', 9, false],
  ['temperature', 7, true],
];

/**
 * The bytes of a SatelliteTelemetry report: SIN 255, MIN 1, then each field most significant
 * bit first (two's complement when signed), no padding between them, zero bits to the last
 * byte. Packed here as a string of bits, on purpose apart from src/lib/codec.
 */
export function satelliteTelemetry(v: Record<string, number>): Buffer {
  let bits = '';
  for (const [name, size, signed] of TELEMETRY_LAYOUT) {
    const x = v[name] ?? 0;
    bits += (signed && x < 0 ? x + 2 ** size : x).toString(2).padStart(size, '0');
  }
  bits = bits.padEnd(Math.ceil(bits.length / 8) * 8, '0');
  const out = Buffer.alloc(2 + bits.length / 8);
  out[0] = 255;
  out[1] = 1;
  for (let i = 0; i < bits.length / 8; i++) out[2 + i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  return out;
}

export class MobileMessages {
  options: MobileOptions = { ...DEFAULT_MOBILE_OPTIONS };
  /** From-mobile messages in time order (the strict paging of ./feed.ts). */
  readonly fromMobile = new FeedLog<FromMobile>();
  /** General to-mobile messages accepted (for tests). */
  readonly toMobile: Array<{ ID: bigint; DestinationID: string; item: Record<string, unknown> }> = [];
  readonly counters = { fromMobileServed: 0, generalSubmitted: 0, generalRejected: 0 };
  nextId = 5_000_000_000n;
  private timer: NodeJS.Timeout | undefined;
  private lastReport = 0;
  private seq = 0;
  private telemetrySeq = 0;

  constructor(private readonly gw: TerminalHost) {}

  configure(o: Partial<MobileOptions>): void {
    this.options = { ...this.options, ...o };
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.generate(), 200);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Adds one from-mobile message (kept in (sec, ID) order). */
  add(m: Omit<FromMobile, 'ID' | 'visibleAt'> & { visibleAt?: number; ID?: bigint }): FromMobile {
    const rec: FromMobile = { ...m, ID: m.ID ?? this.nextId++, visibleAt: m.visibleAt ?? m.sec * 1000 };
    this.fromMobile.add(rec);
    return rec;
  }

  /** One report of terminal `t` received in second `sec`: alternately position and sensor. */
  report(t: Pick<Terminal, 'id' | 'family' | 'account'>, sec: number, visibleAt?: number): FromMobile {
    const n = this.seq++;
    const r =
      n % 2 === 0
        ? positionReport(2718079 + (n % 1000), -4573210 - (n % 500), n % 120, (n * 7) % 360, n % 5 === 4 ? 'Invalid' : 'Valid')
        : sensorReport([21 + (n % 5), -3 - (n % 4)], 90 - (n % 50), n % 3 === 0, `unit ${t.id.slice(-4)}`, Buffer.from([n & 0xff, 0, 0xff]));
    return this.add({
      sec,
      visibleAt,
      MobileID: t.id,
      account: t.account,
      SIN: 128,
      MIN: n % 2 === 0 ? 1 : 2,
      name: n % 2 === 0 ? 'position' : 'sensor',
      fields: r.fields,
      raw: r.raw,
      region: t.family === 'OGx' ? 'AMERRB' : 'AORWSC',
      transport: 1,
    });
  }

  /** One SatelliteTelemetry report of terminal `t` (RawPayload only), in second `sec`. */
  telemetry(t: Pick<Terminal, 'id' | 'family' | 'account'>, sec: number, visibleAt?: number): FromMobile {
    const n = this.telemetrySeq++;
    const raw = satelliteTelemetry({
      timestamp: sec % 2 ** 31,
      latitude: 2722878 + (n % 1000),
      longitude: -4543732 - (n % 500),
      altitude: (n % 200) - 20,
      speed: n % 120,
      heading: (n * 7) % 360,
      satellites: 4 + (n % 9),
      pdop: 1 + (n % 20),
      snr: 250 + (n % 100),
      temperature: (n % 60) - 10,
    });
    return this.add({ sec, visibleAt, MobileID: t.id, account: t.account, SIN: 255, MIN: 1, name: 'SatelliteTelemetry', fields: [], raw, region: t.family === 'OGx' ? 'AMERRB' : 'AORWSC', transport: 1, rawOnly: true });
  }

  /**
   * Seeds `count` messages, `perSecond` to a second from `startSec` (default: so that the
   * last second is the previous one). `lateCount` more become visible `lateAfterMs` from
   * now in seconds already past (late arrivals).
   */
  seed(o: { count: number; perSecond?: number; startSec?: number; lateCount?: number; lateAfterMs?: number; mobileId?: string; kind?: 'reports' | 'telemetry' }): {
    firstSec: number;
    lastSec: number;
  } {
    const now = this.gw.now();
    const perSecond = Math.max(1, o.perSecond ?? 10);
    const seconds = Math.ceil(o.count / perSecond);
    const startSec = o.startSec ?? Math.floor(now / 1000) - seconds - 1;
    const term = this.gw.terminals.get(o.mobileId ?? '') ?? [...this.gw.terminals.values()][0]!;
    const one = o.kind === 'telemetry' ? this.telemetry.bind(this) : this.report.bind(this);
    for (let i = 0; i < o.count; i++) one(term, startSec + Math.floor(i / perSecond));
    for (let i = 0; i < (o.lateCount ?? 0); i++) one(term, startSec + (i % seconds), now + (o.lateAfterMs ?? 2000));
    return { firstSec: startSec, lastSec: startSec + seconds - 1 };
  }

  private generate(): void {
    const every = this.options.reportEveryMs;
    if (!(every > 0)) return;
    const now = this.gw.now();
    if (now - this.lastReport < every) return;
    this.lastReport = now;
    for (const t of this.gw.terminals.values()) {
      if (!t.online || t.fleet) continue;
      this.report(t, Math.floor(now / 1000), now);
      this.telemetry(t, Math.floor(now / 1000), now);
    }
  }

  /** `at` routes `/api/v{version}/<rest>` under the gateway's base path (see TerminalGateway.mount). */
  mount(sim: SimServer, at: (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) => void): void {
    at('POST', 'submit/messages', 'terminal/messages', (r) => this.gw.guard(r, 'SEND', () => this.submit(r)));
    at('GET', 'get/re_messages', 'terminal/re_messages', (r) => this.gw.guard(r, 'GET', (acct) => this.reMessages(r, new Set([acct]))));
    sim.route('POST', /^\/_sim\/from-mobile$/, '_sim/from-mobile', (r) => {
      let b: Record<string, unknown>;
      try {
        b = r.text.trim() ? (JSON.parse(r.text) as Record<string, unknown>) : {};
      } catch {
        return json(400, { error: 'JSON body expected' });
      }
      const count = Number(b.count ?? 10);
      if (!Number.isInteger(count) || count < 0 || count > 1_000_000) return json(400, { error: 'count must be 0 to 1000000' });
      if (b.reportEveryMs !== undefined) this.configure({ reportEveryMs: Number(b.reportEveryMs) });
      const out = this.seed({
        count,
        perSecond: b.perSecond === undefined ? undefined : Number(b.perSecond),
        startSec: b.startSec === undefined ? undefined : Number(b.startSec),
        lateCount: b.lateCount === undefined ? undefined : Number(b.lateCount),
        lateAfterMs: b.lateAfterMs === undefined ? undefined : Number(b.lateAfterMs),
        mobileId: typeof b.mobileId === 'string' ? b.mobileId : undefined,
        kind: b.kind === 'telemetry' ? 'telemetry' : 'reports',
      });
      return json(200, { seeded: count, ...out, total: this.fromMobile.items.length });
    });
  }

  /** GET get/re_messages (and get/subaccounts/re_messages): the messages of `accounts`. */
  reMessages(r: SimRequest, accounts: ReadonlySet<string>): SimReply {
    const from = r.query.get('FromUTC') ?? '';
    const fromSec = parseSec(from);
    if (fromSec === undefined) return json(200, { ErrorID: ERR.INVALID_FROM_UTC, NextFromUTC: null, Messages: null });
    const now = this.gw.now();
    const withRaw = (r.query.get('IncludeRawPayload') ?? 'true').toLowerCase() !== 'false';
    const page = pageFeed(
      this.fromMobile.from(fromSec),
      from,
      fromSec,
      Math.floor(now / 1000),
      { ...DEFAULT_FEED_PAGING, maxPerReply: this.options.maxMessages, emptyNextFromUTC: this.options.emptyNext },
      (m) => accounts.has(m.account) && m.visibleAt <= now,
    );
    const out = page.items;
    this.counters.fromMobileServed += out.length;
    const messages = out.map((m) => {
      const rec: Record<string, unknown> = {
        ID: m.ID,
        MessageUTC: utc(m.sec),
        ReceiveUTC: utc(m.sec),
        SIN: m.SIN,
        MobileID: m.MobileID,
      };
      if (withRaw && this.options.omit !== 'raw') rec.RawPayload = m.raw.toString('base64');
      if (this.options.omit !== 'payload' && !m.rawOnly) rec.Payload = { Name: m.name, SIN: m.SIN, MIN: m.MIN, IsForward: false, Fields: m.fields };
      rec.RegionName = m.region;
      rec.OTAMessageSize = m.raw.length;
      rec.Transport = m.transport;
      rec.AccountID = m.account;
      return rec;
    });
    return json(200, { ErrorID: 0, NextFromUTC: page.NextFromUTC, Messages: messages });
  }

  private submit(r: SimRequest): SimReply {
    const body = this.gw.jsonArray(r);
    if (!Array.isArray(body)) return body;
    if (body.length > this.options.maxBatch) return json(200, { ErrorID: ERR.TOO_MANY_MESSAGES, Submissions: null });
    const submissions = body.map((raw) => {
      const it = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
      const dest = typeof it.DestinationID === 'string' ? it.DestinationID : '';
      const userId = it.UserMessageID === undefined || it.UserMessageID === null ? undefined : BigInt(String(it.UserMessageID));
      const fail = (errorId: number) => {
        this.counters.generalRejected++;
        const e: Record<string, unknown> = { ErrorID: errorId, DestinationID: dest };
        if (userId !== undefined) e.UserMessageID = userId;
        return e;
      };
      let term = this.gw.terminals.get(dest);
      if (!term && this.gw.options.acceptUnknownTerminals && /^\d{8}SKY[0-9A-F]{4}$/.test(dest)) term = this.gw.addTerminal({ id: dest });
      if (!term) return fail(ERR.INVALID_DESTINATION);
      const checked = checkGeneralMessage(it, this.options.maxRawBytes);
      if ('errorId' in checked) return fail(checked.errorId);
      const size = checked.size;
      const id = this.gw.acceptMessage(term, payloadOf(it));
      this.counters.generalSubmitted++;
      this.toMobile.push({ ID: id, DestinationID: dest, item: it });
      const out: Record<string, unknown> = { ID: id, DestinationID: dest, ErrorID: 0, OTAMessageSize: size };
      if (userId !== undefined) out.UserMessageID = userId;
      return out;
    });
    return json(200, { ErrorID: 0, Submissions: submissions });
  }
}
