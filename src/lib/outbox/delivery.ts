/**
 * Outcomes handed to a script's code before the outbox forgets them (issue 45: the
 * TerminalClient's outbox, clients/terminal-outbox.ts). The engine emits a msg's outcome and
 * then forgets the msg in its store; a script may not listen yet (the outcomes of entries
 * accepted in an earlier life come as the outbox opens) or may be handling one when the
 * process dies. So the store given to the engine is wrapped (`wrap`): its `forget` of a msg
 * is held back until every consumer took that outcome (a listener returned, its promise
 * settled; an iterator was asked for the next one), and an outcome no consumer took by
 * close() is not forgotten: the next open emits it again (at least once across a restart,
 * exactly once otherwise).
 *
 * Outcomes are handed out in the order the engine emitted them, one at a time: the next
 * one once every consumer took the one before. Without a consumer they wait in memory
 * (their msgs stay in the store).
 */
import type { OutboxStore } from './types';

/** A consumer: resolves once it took the outcome (its error is told to `onError` and counts as taken). */
export type Taker<T> = (o: T) => unknown;

export class OutcomeDelivery<T extends { key: string }> {
  private readonly queue: T[] = [];
  /** Taken by every consumer before the engine asked to forget them. */
  private readonly taken = new Set<string>();
  /** The engine asked to forget them before they were taken. */
  private readonly held = new Set<string>();
  private readonly iterators = new Set<Taker<T>>();
  private readonly enders = new Set<() => void>();
  private pumping = false;
  private closed = false;
  private store: OutboxStore | undefined;

  constructor(
    /** The consumers now besides the iterators (the 'outcome' listeners). */
    private readonly listeners: () => Array<Taker<T>>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** The store as the engine must see it: `forget` held back until the outcome was taken. */
  wrap(store: OutboxStore): OutboxStore {
    this.store = store;
    const forget = (keys: string[]) => this.forget(keys);
    return new Proxy(store, {
      get(target, prop) {
        if (prop === 'forget') return forget;
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /** An outcome the engine emitted. */
  push(o: T): void {
    if (this.closed) return;
    this.queue.push(o);
    void this.pump();
  }

  /** Hands out what waits, when there is a consumer (call it when one comes). */
  async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length && !this.closed) {
        const takers = [...this.listeners(), ...this.iterators];
        if (!takers.length) break;
        const o = this.queue.shift()!;
        await Promise.all(
          takers.map(async (t) => {
            try {
              await t(o);
            } catch (err) {
              this.onError(err);
            }
          }),
        );
        this.took(o.key);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** An async iterator of outcomes: one is taken when the next is asked for (or the loop ends). */
  iterate(): AsyncIterableIterator<T> {
    let asking: ((r: IteratorResult<T>) => void) | undefined;
    let offered: { o: T; took: () => void } | undefined;
    let given: (() => void) | undefined;
    let ended = false;
    const take: Taker<T> = (o) =>
      new Promise<void>((took) => {
        if (asking) {
          const a = asking;
          asking = undefined;
          given = took;
          a({ value: o, done: false });
        } else offered = { o, took };
      });
    const end = (): void => {
      ended = true;
      this.iterators.delete(take);
      this.enders.delete(end);
      asking?.({ value: undefined, done: true });
      asking = undefined;
    };
    const ack = (): void => {
      given?.();
      given = undefined;
    };
    this.iterators.add(take);
    this.enders.add(end);
    queueMicrotask(() => void this.pump());
    const it: AsyncIterableIterator<T> = {
      next: () => {
        ack();
        if (ended) return Promise.resolve({ value: undefined, done: true });
        if (offered) {
          const { o, took } = offered;
          offered = undefined;
          given = took;
          return Promise.resolve({ value: o, done: false });
        }
        return new Promise((resolve) => {
          asking = resolve;
        });
      },
      return: () => {
        ack();
        offered?.took();
        offered = undefined;
        end();
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  }

  /** No more hand-outs: iterators end; what was not taken stays in the store (emitted again at the next open). */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    for (const end of [...this.enders]) end();
  }

  private took(key: string): void {
    if (this.closed) return;
    if (this.held.delete(key)) void this.forgetNow([key]);
    else this.taken.add(key);
  }

  private async forget(keys: string[]): Promise<void> {
    const now: string[] = [];
    for (const k of keys) {
      if (this.taken.delete(k)) now.push(k);
      else this.held.add(k);
    }
    if (now.length) await this.store!.forget(now);
  }

  private async forgetNow(keys: string[]): Promise<void> {
    try {
      await this.store!.forget(keys);
    } catch {
      // Not forgotten (the store closed or failed): emitted again at the next open.
    }
  }
}
