/**
 * The gateway's error catalogue (`GET info/service?GetErrorCodes=true`), fetched once
 * per account and cached, so that rejected entries can carry the error's name.
 */
import type { ApiClient, AuthProvider } from '../transport/http';
import { schema } from '../common/schema';

/** Names we know even when the catalogue cannot be fetched (real-services.md: likely values). */
export const KNOWN_ERRORS: Record<number, string> = {
  24579: 'SUBMIT_RATE_EXCEEDED',
  24581: 'STATUS_RATE_EXCEEDED',
};

const catalogueReply = schema((z) =>
  z.object({
    ErrorCodes: z.array(z.object({ ID: z.number(), Name: z.string().optional(), Description: z.string().nullish() }).loose()).nullish(),
  }).loose(),
);

export interface CatalogueEntry {
  name: string;
  description?: string;
}

export class ErrorCatalogue {
  private entries: Map<number, CatalogueEntry> | undefined;
  private loading: Promise<void> | undefined;
  private failedAt = 0;

  constructor(private readonly source: () => { client: ApiClient; auth: AuthProvider; path: string }) {}

  /** Loads the catalogue if not yet loaded; never throws (names are a nicety). */
  async load(signal?: AbortSignal): Promise<void> {
    if (this.entries || Date.now() - this.failedAt < 60_000) return;
    if (!this.loading) {
      this.loading = (async () => {
        try {
          const { client, auth, path } = this.source();
          const res = await client.request({ method: 'GET', path, query: { GetErrorCodes: 'true' }, group: 'INFO', auth, idempotent: true, signal });
          const parsed = catalogueReply().safeParse(res.body);
          if (!parsed.success) throw new Error('bad catalogue');
          const map = new Map<number, CatalogueEntry>();
          for (const e of parsed.data.ErrorCodes ?? []) map.set(e.ID, { name: e.Name ?? `ERROR_${e.ID}`, description: e.Description ?? undefined });
          this.entries = map;
        } catch {
          this.failedAt = Date.now();
        } finally {
          this.loading = undefined;
        }
      })();
    }
    await this.loading;
  }

  lookup(id: number): CatalogueEntry | undefined {
    return this.entries?.get(id) ?? (KNOWN_ERRORS[id] ? { name: KNOWN_ERRORS[id]! } : undefined);
  }
}
