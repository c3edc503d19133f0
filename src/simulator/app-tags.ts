/**
 * Area (d), the tags: the customer a request names by its manager token (404 unknown, 403
 * another account's), the tag list paged by `page`/`per_page` (plus `offset`) with a
 * search, and a tag's chipset configuration by ID or serial number and version.
 */
import type { SimReply, SimRequest } from './server';
import { json } from './server';
import { AppFail, BASE_TIME, PARAMS, UUID_RE, intParam, param, type AppAccount, type AppContext } from './app-model';

/** The account whose customer token is given (own account when none is). */
function customer(ctx: AppContext, r: SimRequest, own: AppAccount): AppAccount {
  const p = param(r, PARAMS.token);
  if (!p || p.value === '') return own;
  const acct = ctx.accounts.find((a) => a.users.some((u) => u.tokenManager === p.value));
  if (!acct) throw new AppFail(404, 'no customer with this token', p.name);
  if (acct !== own) throw new AppFail(403, 'the customer belongs to another account', p.name);
  return acct;
}

/** GET /app/costummer/tag: a page of the customer's tags, with `nextPage`/`prevPage` null at the ends. */
export function tags(ctx: AppContext, r: SimRequest, own: AppAccount): SimReply {
  const o = ctx.options;
  const acct = customer(ctx, r, own);
  const page = intParam(r, PARAMS.page, 1, 1_000_000, 1);
  const perPage = intParam(r, PARAMS.perPage, 1, o.maxPerPage, o.defaultPerPage);
  const skip = intParam(r, PARAMS.offset, 0, 1_000_000_000, 0);
  const search = param(r, PARAMS.search)?.value.toLowerCase() ?? '';
  const all = search ? acct.tags.filter((t) => t.device_name.toLowerCase().includes(search) || t.serial_number.toLowerCase().includes(search)) : acct.tags;
  const start = skip + (page - 1) * perPage;
  const items = all.slice(start, start + perPage);
  if (o.omitNextPage) return json(200, { itemsReceived: items.length, curPage: page, offset: start, perPage, items });
  return json(200, {
    itemsReceived: items.length,
    curPage: page,
    nextPage: start + perPage < all.length ? page + 1 : null,
    prevPage: page > 1 ? page - 1 : null,
    offset: start,
    perPage,
    items,
  });
}

/** The tag named by ID and/or serial number in the customer's account (403 when another account has it, 404 when none). */
function findTag(ctx: AppContext, r: SimRequest, acct: AppAccount): AppAccount['tags'][number] {
  const id = param(r, PARAMS.tagId);
  const serial = param(r, PARAMS.serial);
  if ((!id || id.value === '') && (!serial || serial.value === '')) throw new AppFail(400, 'give tag_id or serial_number', 'tag_id');
  if (id && id.value !== '' && !UUID_RE.test(id.value)) throw new AppFail(400, `${id.name} must be a tag ID (UUID)`, id.name);
  const match = (t: AppAccount['tags'][number]) => (!id || id.value === '' || t.id === id.value) && (!serial || serial.value === '' || t.serial_number === serial.value);
  const tag = acct.tags.find(match);
  if (!tag) {
    if (ctx.accounts.some((a) => a !== acct && a.tags.some(match))) throw new AppFail(403, 'the tag belongs to another account');
    throw new AppFail(404, 'no tag with this ID or serial number');
  }
  return tag;
}

/** GET /app/tag/chipset/config: the tag's configuration, at a version up to its last (`latest` or none: the last). */
export function tagConfig(ctx: AppContext, r: SimRequest, own: AppAccount): SimReply {
  const acct = customer(ctx, r, own);
  const tag = findTag(ctx, r, acct);
  const last = tag.lastConfiguration as { version: number; chipset: string };
  const chipset = param(r, PARAMS.chipset);
  if (chipset && chipset.value !== '' && chipset.value.toLowerCase() !== last.chipset) {
    throw new AppFail(400, `${chipset.name} does not match the tag's chipset`, chipset.name);
  }
  const v = param(r, PARAMS.version);
  let version = last.version;
  if (v && v.value !== '' && v.value !== 'latest') {
    version = Number(v.value);
    if (!/^\d+$/.test(v.value) || version < 1) throw new AppFail(400, `${v.name} must be a positive integer or latest`, v.name);
    if (version > last.version) throw new AppFail(404, `the tag has no configuration version ${version}`);
  }
  const n = Number(tag.serial_number.replace(/\D/g, '')) || 0;
  return json(200, {
    tag_id: tag.id,
    serial_number: tag.serial_number,
    chipset: last.chipset,
    version,
    reportIntervalSeconds: 300 * version,
    motionSensitivity: 1 + (n % 5),
    advertisingIntervalMs: 1000,
    txPowerDbm: last.chipset === 'esp32' ? 9 : 4,
    geofence: { enabled: n % 2 === 0, radiusMeters: 100 + n },
    updated_at: new Date(BASE_TIME + version * 86_400_000).toISOString(),
  });
}
