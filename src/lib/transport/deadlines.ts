/**
 * What ends a call early: its timeout and its caller's signal. One abort handle per call
 * (CallAbort), one timer per client for every deadline (calls share one timeout, so the
 * order they start in is the order they time out in) and one listener per caller's signal.
 */
import { GatewayError } from '../common/errors';

/**
 * The abort handle of one call as undici takes it (an emitter's `on`/`once`/`removeListener`):
 * a call's timeout and its caller's signal abort it. Cheaper than an AbortController (an
 * EventTarget) and its listeners per call.
 */
export class CallAbort {
  aborted = false;
  reason: unknown = undefined;
  timedOut = false;
  /** When the call times out (Date.now() based); its place in the client's FIFO of deadlines. */
  deadline = 0;
  /** The set of calls following the caller's signal this call is in. */
  followed: Set<CallAbort> | undefined;
  private listener: (() => void) | undefined;
  constructor(readonly where: string) {}
  on(_event: 'abort', fn: () => void): this {
    this.listener = fn;
    return this;
  }
  once(event: 'abort', fn: () => void): this {
    return this.on(event, fn);
  }
  removeListener(_event: 'abort', fn: () => void): this {
    if (this.listener === fn) this.listener = undefined;
    return this;
  }
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const l = this.listener;
    this.listener = undefined;
    l?.();
  }
}

/** The calls in flight of one client, by deadline and by caller's signal. */
export class CallDeadlines {
  /** Calls in flight by deadline: every call has the same timeout, so insertion order is deadline order. */
  private readonly deadlines = new Set<CallAbort>();
  private timer: NodeJS.Timeout | undefined;
  /** Calls in flight by the caller's signal: one listener per signal instead of one per call. */
  private readonly bySignal = new WeakMap<AbortSignal, Set<CallAbort>>();

  constructor(private readonly timeoutMs: number) {}

  /** Starts a call: aborted at once when the caller's signal already is, else followed, and timed. */
  start(call: CallAbort, caller: AbortSignal | undefined): void {
    if (caller?.aborted) call.abort(caller.reason);
    else if (caller) this.follow(caller, call);
    this.watch(call);
  }

  /** Ends a call: no longer timed nor following its caller's signal. */
  end(call: CallAbort): void {
    this.unwatch(call);
    if (call.followed) call.followed.delete(call);
  }

  /** Stops the timer (the client closes). */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Starts a call's timeout: one timer for the client, armed for the earliest deadline. */
  private watch(call: CallAbort): void {
    call.deadline = Date.now() + this.timeoutMs;
    this.deadlines.add(call);
    this.timer ??= setTimeout(this.sweep, this.timeoutMs);
  }

  private unwatch(call: CallAbort): void {
    this.deadlines.delete(call);
    if (this.deadlines.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Times out every call past its deadline, then waits for the next one. */
  private readonly sweep = (): void => {
    this.timer = undefined;
    const now = Date.now();
    for (const call of this.deadlines) {
      if (call.deadline > now) {
        this.timer = setTimeout(this.sweep, call.deadline - now);
        return;
      }
      this.deadlines.delete(call);
      call.timedOut = true;
      call.abort(new GatewayError('TIMEOUT', `${call.where}: no complete reply within ${this.timeoutMs / 1000} s`));
    }
  };

  /** Makes `call` follow the caller's signal (one listener per signal, removed when it fires). */
  private follow(signal: AbortSignal, call: CallAbort): void {
    let calls = this.bySignal.get(signal);
    if (!calls) {
      const set = new Set<CallAbort>();
      calls = set;
      this.bySignal.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const c of set) c.abort(signal.reason);
          set.clear();
        },
        { once: true },
      );
    }
    calls.add(call);
    call.followed = calls;
  }
}
