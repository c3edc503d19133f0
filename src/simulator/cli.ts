#!/usr/bin/env node
/**
 * iotgw-simulator [--port 1881] [--host 127.0.0.1] [--window-seconds 60] [--calls 5]
 *                 [--no-limits] [--retry-after] [--backlog N] [--next-id N]
 */
import { startSimulator } from './index';

function usage(): never {
  process.stdout.write(`Usage: iotgw-simulator [options]
  --port N             port to listen on (default 1881; 0 = any free port)
  --host H             address to bind (default 127.0.0.1; loopback only is advised)
  --calls N            calls per throttle group per window (default 5)
  --window-seconds S   sliding window of the rate limit (default 60)
  --no-limits          turn rate limits and the concurrency cap off
  --retry-after        send Retry-After on 429 replies
  --backlog N          seed N closed status records in the past
  --next-id N          first message ID (e.g. 9223372036854775800)
  --reports-every S    each online terminal sends a from-mobile report every S seconds (default 5; 0 = off)
  --accept-unknown     accept any prime-ID-shaped destination as an online IDP terminal
`);
  process.exit(0);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (args.includes('--help') || args.includes('-h')) usage();
  const port = Number(opt('--port') ?? process.env.IOTGW_SIM_PORT ?? 1881);
  const host = opt('--host') ?? '127.0.0.1';
  const noLimits = args.includes('--no-limits');
  const calls = Number(opt('--calls') ?? 5);
  const windowMs = Number(opt('--window-seconds') ?? 60) * 1000;
  const sim = await startSimulator({
    port,
    host,
    terminal: {
      rateLimitCalls: noLimits ? 0 : calls,
      rateLimitWindowMs: windowMs,
      maxConcurrent: noLimits ? 0 : 3,
      retryAfter: args.includes('--retry-after'),
      acceptUnknownTerminals: args.includes('--accept-unknown'),
    },
    messages: { reportEveryMs: Number(opt('--reports-every') ?? 5) * 1000 },
  });
  const nextId = opt('--next-id');
  if (nextId) sim.terminal.setNextId(nextId);
  const backlog = opt('--backlog');
  if (backlog) sim.terminal.seedBacklog(Number(backlog));
  process.stdout.write(`iotgw simulator listening\n  gateway base URL: ${sim.url}\n  application API:  ${sim.appUrl}\n  control:          ${sim.url}/_sim/state\n`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

void main().catch((err) => {
  const e = err as NodeJS.ErrnoException & { port?: number };
  if (e.code === 'EADDRINUSE') {
    process.stderr.write(`iotgw-simulator: port ${e.port ?? ''} is already in use; choose another with --port N (--port 0 picks a free one)\n`);
    process.exit(1);
  }
  process.stderr.write(`iotgw-simulator: ${(err as Error).message}\n`);
  process.exit(1);
});
