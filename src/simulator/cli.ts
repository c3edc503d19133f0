#!/usr/bin/env node
/**
 * iotgw-simulator [options]: the bundled gateway simulator on its own (`--help` lists the
 * options). Every switch of the real services' edges (real-services.md) that the tests turn
 * on through `POST /_sim/terminal-options` has a flag here too, so a person can see a flow
 * meet them. A wrong option or value is refused with a message naming it and what is allowed.
 */
import { startSimulator } from './index';
import type { TerminalOptions } from './terminal';

type Kind = { int: true } | { oneOf: readonly string[] } | { text: true } | { flag: true };

/** Flags that set one terminal option each: name -> [option, kind, help]. */
const TERMINAL_FLAGS: Record<string, [keyof TerminalOptions, Kind, string]> = {
  '--throttle-as': ['throttleAs', { oneOf: ['http', 'errorId'] }, 'a throttled call is answered 429 (http, default) or HTTP 200 + ErrorID 24579/24581 (errorId)'],
  '--late-seconds': ['lateBySeconds', { int: true }, 'a status record becomes visible N s after its StatusUTC (default 0)'],
  '--late-update-seconds': ['lateUpdatesBySeconds', { int: true }, 'a terminal update becomes visible N s after its UpdateUTC (default 0)'],
  '--crowd-status': ['crowdStatusRecords', { int: true }, 'each second a message status is recorded in first gets N other closed records (500+: a crowded second; default 0)'],
  '--empty-next-from-utc': ['emptyNextFromUTC', { oneOf: ['null', 'empty', 'from'] }, 'NextFromUTC of an empty status reply (default null)'],
  '--base-path': ['basePath', { text: true }, 'a path before /api/v{version}, e.g. /gw/v1'],
  '--echo-destination': ['echoDestination', { oneOf: ['as-sent', 'lower', 'padded'] }, 'how results echo DestinationID (default as-sent)'],
  '--result-order': ['resultOrder', { oneOf: ['in-order', 'reversed'] }, 'order of per-item results (default in-order)'],
  '--token-error-as': ['tokenErrorAs', { oneOf: ['http', 'ok-with-error'] }, 'a refused login is 401 (http, default) or HTTP 200 + error'],
  '--token-ttl': ['tokenTtlSeconds', { int: true }, 'expires_in of a token, seconds (default 3600)'],
  '--service-calls': ['serviceCalls', { int: true }, 'service-wide calls per minute across all accounts, then 503 (default 0 = off)'],
  '--retry-after': ['retryAfter', { flag: true }, 'send Retry-After on 429 replies'],
  '--accept-unknown': ['acceptUnknownTerminals', { flag: true }, 'accept any prime-ID-shaped destination as an online IDP terminal'],
};

/** Flags of the simulator as a whole. */
const OWN_FLAGS: Record<string, [Kind, string]> = {
  '--port': [{ int: true }, 'port to listen on (default 1881 or IOTGW_SIM_PORT; 0 = any free port)'],
  '--host': [{ text: true }, 'address to bind (default 127.0.0.1; loopback only is advised)'],
  '--calls': [{ int: true }, 'calls per throttle group per window (default 5)'],
  '--window-seconds': [{ int: true }, 'sliding window of the rate limit (default 60)'],
  '--no-limits': [{ flag: true }, 'turn rate limits and the concurrency cap off'],
  '--backlog': [{ int: true }, 'seed N closed status records in the past'],
  '--next-id': [{ text: true }, 'first message ID (a decimal, e.g. 9223372036854775800)'],
  '--reports-every': [{ int: true }, 'each online terminal sends a from-mobile report every N seconds (default 5; 0 = off)'],
  '--fleet-size': [{ int: true }, 'terminals of the inventory (default 3000)'],
  '--fleet-every': [{ int: true }, 'every N seconds a few fleet terminals report moving positions and one changes (default 3; 0 = off)'],
};

function usage(): string {
  const line = (name: string, kind: Kind, help: string) => {
    const arg = 'int' in kind ? ' N' : 'oneOf' in kind ? ` ${kind.oneOf.join('|')}` : 'text' in kind ? ' X' : '';
    return `  ${`${name}${arg}`.padEnd(40)} ${help}\n`;
  };
  return (
    'Usage: iotgw-simulator [options]\n' +
    Object.entries(OWN_FLAGS).map(([n, [k, h]]) => line(n, k, h)).join('') +
    'The real services\' edges (see docs/real-services.md):\n' +
    Object.entries(TERMINAL_FLAGS).map(([n, [, k, h]]) => line(n, k, h)).join('')
  );
}

class UsageError extends Error {}

/** Reads argv into {own, terminal}; throws UsageError naming a wrong flag or value. */
export function parseArgs(args: string[]): { own: Record<string, string | number | boolean>; terminal: Partial<TerminalOptions> } {
  const own: Record<string, string | number | boolean> = {};
  const terminal: Record<string, string | number | boolean> = {};
  for (let i = 0; i < args.length; i++) {
    const name = args[i]!;
    const t = TERMINAL_FLAGS[name];
    const o = OWN_FLAGS[name];
    const kind = t ? t[1] : o?.[0];
    if (!kind) throw new UsageError(`unknown option "${name}"; --help lists them`);
    let value: string | number | boolean = true;
    if (!('flag' in kind)) {
      const raw = args[++i];
      if (raw === undefined || raw.startsWith('--')) throw new UsageError(`${name} needs a value`);
      if ('int' in kind) {
        if (!/^\d{1,9}$/.test(raw)) throw new UsageError(`${name}: must be a whole number of 0 or more, not "${raw}"`);
        value = Number(raw);
      } else if ('oneOf' in kind) {
        if (!kind.oneOf.includes(raw)) throw new UsageError(`${name}: must be one of ${kind.oneOf.join(', ')}, not "${raw}"`);
        value = raw;
      } else value = raw;
    }
    if (t) terminal[t[0]] = value;
    else own[name] = value;
  }
  if (typeof own['--next-id'] === 'string' && !/^\d{1,19}$/.test(own['--next-id'])) throw new UsageError(`--next-id: must be a decimal message ID, not "${own['--next-id']}"`);
  if (typeof own['--port'] === 'number' && own['--port'] > 65535) throw new UsageError('--port: must be from 0 to 65535');
  return { own, terminal: terminal as Partial<TerminalOptions> };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(usage());
    process.exit(0);
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(args);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`iotgw-simulator: ${err.message}\n`);
    process.exit(2);
  }
  const { own, terminal } = parsed;
  const noLimits = own['--no-limits'] === true;
  const sim = await startSimulator({
    port: Number(own['--port'] ?? process.env.IOTGW_SIM_PORT ?? 1881),
    host: String(own['--host'] ?? '127.0.0.1'),
    terminal: {
      rateLimitCalls: noLimits ? 0 : Number(own['--calls'] ?? 5),
      rateLimitWindowMs: Number(own['--window-seconds'] ?? 60) * 1000,
      maxConcurrent: noLimits ? 0 : 3,
      ...terminal,
    },
    messages: { reportEveryMs: Number(own['--reports-every'] ?? 5) * 1000 },
    fleet: own['--fleet-size'] === undefined ? undefined : { size: Number(own['--fleet-size']) },
    demo: { everyMs: Number(own['--fleet-every'] ?? 3) * 1000 },
  });
  if (own['--next-id']) sim.terminal.setNextId(String(own['--next-id']));
  if (own['--backlog']) sim.terminal.seedBacklog(Number(own['--backlog']));
  process.stdout.write(`iotgw simulator listening\n  gateway base URL: ${sim.url}${terminal.basePath ?? ''}\n  application API:  ${sim.appUrl}\n  control:          ${sim.url}/_sim/state\n`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (require.main === module) {
  void main().catch((err) => {
    const e = err as NodeJS.ErrnoException & { port?: number };
    if (e.code === 'EADDRINUSE') {
      process.stderr.write(`iotgw-simulator: port ${e.port ?? ''} is already in use; choose another with --port N (--port 0 picks a free one)\n`);
      process.exit(1);
    }
    process.stderr.write(`iotgw-simulator: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
