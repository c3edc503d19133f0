/**
 * Who is told when a call waits for a rate-limit slot (issue 15): a node's status says
 * "waiting for a SEND slot (23 s)" instead of only "requesting".
 *
 * A node registers a reporter for the abort signals its calls carry (handleInput does it
 * for its own signal and for `waitSignals`); the ApiClient looks the reporter up by the
 * call's signal when it waits for a group's slot. Nothing is kept per call but a map entry
 * while it waits.
 */
export interface SlotWait {
  /** The throttle group (SEND, GET, ...). */
  group: string;
  /** Milliseconds until the limiter expects a slot to free (0: unknown, e.g. calls in flight). */
  remaining(): number;
  /** When the wait began (Date.now()). */
  since: number;
}

export interface WaitReporter {
  /** A wait begins; the returned function ends it. */
  begin(wait: SlotWait): () => void;
}

const reporters = new WeakMap<AbortSignal, WaitReporter>();

export function setWaitReporter(signal: AbortSignal, reporter: WaitReporter): void {
  reporters.set(signal, reporter);
}

export function waitReporterOf(signal: AbortSignal | undefined): WaitReporter | undefined {
  return signal ? reporters.get(signal) : undefined;
}

/** Waits for `acquire()`, telling the signal's reporter (if any) about the wait. */
export async function reportedAcquire(
  group: string,
  limiter: { acquire(signal?: AbortSignal): Promise<() => void>; msUntilFree(): number },
  signal: AbortSignal | undefined,
): Promise<() => void> {
  const reporter = waitReporterOf(signal);
  if (!reporter) return limiter.acquire(signal);
  const end = reporter.begin({ group, remaining: () => limiter.msUntilFree(), since: Date.now() });
  try {
    return await limiter.acquire(signal);
  } finally {
    end();
  }
}
