/**
 * One vocabulary for the list nodes (iotgw-lorawan-devices, iotgw-tag-list, and any later
 * one): `pages` ('one': one page, 'all': every page in turn, one msg each with msg.parts),
 * `page` (1-based: 1 is the first page) and `pageSize`, as config properties and as msg
 * overrides (`msg.pages`, `msg.page`, `msg.pageSize`).
 *
 * Saved flows written before it keep working: `migrateListConfig` reads the old names when
 * the new ones are absent (devices: `allPages` boolean, `page` as sent to the service, so a
 * zero-based service was page 0; tag list: `walk` 'page' | 'all', `perPage`).
 */
import { badInput } from '../common/errors';
import { describeType, showValue } from '../common/int64';

export type PagesMode = 'one' | 'all';

export interface ListConfig {
  pages?: PagesMode;
  page?: string | number;
  pageSize?: string | number;
  /** Devices only: the number the service gives its first page (1, or 0 for a zero-based service). */
  firstPage?: string | number;
  /** Old names (read when the new ones are absent). */
  allPages?: boolean;
  walk?: 'page' | 'all';
  perPage?: string | number;
}

const absent = (v: unknown) => v === undefined || v === null || v === '';

/**
 * The config in the new vocabulary; the old names are read only when `pages` is absent
 * (undefined, or '' as the editor saves a flow it imported with the old names).
 */
export function migrateListConfig<T extends ListConfig>(config: T): T {
  if (!absent(config.pages)) return config;
  const out: T = { ...config };
  if (config.walk !== undefined) out.pages = config.walk === 'all' ? 'all' : 'one';
  else out.pages = config.allPages === true ? 'all' : 'one';
  if (absent(out.pageSize) && !absent(config.perPage)) out.pageSize = config.perPage;
  if (config.allPages !== undefined && absent(config.firstPage)) {
    // Devices saved before: `page` was the number sent to the service. Page 0 meant the
    // first page of a zero-based service; 1.. stay the same numbers with the default first page 1.
    if (!absent(config.page) && Number(config.page) === 0) {
      out.page = 1;
      out.firstPage = 0;
    }
  }
  delete out.allPages;
  delete out.walk;
  delete out.perPage;
  return out;
}

/** 'one' | 'all' (true / false also taken, as the old devices option was a boolean). */
export function pagesMode(value: unknown, where: string): PagesMode | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === 'one' || value === false) return 'one';
  if (value === 'all' || value === true) return 'all';
  throw badInput(where, `must be "one" (one page) or "all" (every page in turn), not ${typeof value === 'string' ? showValue(value) : describeType(value)}`);
}

/** The number sent to a service whose first page is `firstPage`, for 1-based `page`. */
export function servicePage(page: number, firstPage: number): number {
  return page - 1 + firstPage;
}
