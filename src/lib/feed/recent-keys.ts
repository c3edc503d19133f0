/** The reader's memory of recently emitted keys (not persisted; see ./reader.ts). */

/**
 * A bounded set of the last `size` keys added (insertion order; the oldest is forgotten
 * first). A Set keeps insertion order, so the oldest key is its first.
 */
export class RecentKeys {
  private readonly keys = new Set<string>();
  constructor(readonly size: number) {}
  has(k: string): boolean {
    return this.keys.has(k);
  }
  add(k: string): void {
    if (this.size <= 0 || this.keys.has(k)) return;
    this.keys.add(k);
    if (this.keys.size > this.size) this.keys.delete(this.keys.values().next().value as string);
  }
  clear(): void {
    this.keys.clear();
  }
  get count(): number {
    return this.keys.size;
  }
}
