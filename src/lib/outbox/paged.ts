/**
 * A column of numbers in fixed pages of 4,096 (issue 45: memory): it grows a page at a time
 * and never copies itself, so growing to 100,000 entries leaves no trail of freed, ever
 * larger arrays behind (which malloc keeps: tens of MB of RSS for a few MB of data).
 */
const SHIFT = 12;
const PAGE = 1 << SHIFT;
const MASK = PAGE - 1;

type Typed = Float64Array | Uint32Array | Uint16Array | Uint8Array | Int32Array;

export class Paged {
  private pages: Typed[] = [];

  constructor(private readonly make: (n: number) => Typed) {}

  get(i: number): number {
    const p = this.pages[i >>> SHIFT];
    return p === undefined ? 0 : p[i & MASK];
  }

  set(i: number, v: number): void {
    const at = i >>> SHIFT;
    while (at >= this.pages.length) this.pages.push(this.make(PAGE));
    this.pages[at][i & MASK] = v;
  }

  /** Drops the pages from slot `n` on (their values are gone). */
  truncate(n: number): void {
    this.pages.length = Math.min(this.pages.length, (n + MASK) >>> SHIFT);
  }
}

export const f64 = (): Paged => new Paged((n) => new Float64Array(n));
export const u32 = (): Paged => new Paged((n) => new Uint32Array(n));
export const u16 = (): Paged => new Paged((n) => new Uint16Array(n));
export const u8 = (): Paged => new Paged((n) => new Uint8Array(n));
