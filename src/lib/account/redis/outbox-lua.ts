/**
 * The Lua scripts of the Redis outbox store (outbox-store.ts): each store call is one of
 * them, so it is atomic, and each is safe to run twice (RedisConnection.run runs it again
 * when its reply was lost): an accept finds its msg and answers its seq, a mark finds its
 * attempt, an end skips what ended, a back-to-waiting what is not sending, a forget what
 * is gone.
 *
 * Keys of one outbox (all `<prefix>{<account>}:outbox:<name>:<kind>`, one hash tag):
 * - `seq` the counter of seqs (INCRBY); `meta` the figures: `entries` not ended, `bytes` of live msgs;
 * - `z` every live entry by seq (open() pages through it); `w` the waiting ones by
 *   priority * 1e15 + seq (the sending order);
 * - hashes by entry id: `e` its head (JSON, written once), `i` its item (JSON), `a` its
 *   attempts, `s` its state (absent: waiting, never tried; `w` waiting again; `s<attempt
 *   JSON>` sending; `e<outcome JSON>` ended), `sa` the attempt that got its answer;
 * - hashes by msg key: `mh` its head (`{"s":first seq,"n":entries,"b":bytes,...}`), `mj` its JSON,
 *   `mo` the claim of its outcome (`<owner:fence>@<Redis ms>`: the instance that emits it, CLAIM).
 * The lease key is the feed lease's (`lease:outbox:<name>`, feed-lease.ts): the writes of a
 * send (mark, its end, back to waiting) need it held, with this instance's fence.
 */

/** Head JSON with the seq put first: ARGV gives it without (`{"p":...}`), the script knows the seq. */
const LIB = `local function num(n) return string.format('%.0f', n) end
local function withSeq(rest, seq) return '{"s":' .. num(seq) .. ',' .. string.sub(rest, 2) end
local function figures(meta) local f = redis.call('HMGET', meta, 'entries', 'bytes') return {tonumber(f[1] or '0'), tonumber(f[2] or '0')} end
`;

/**
 * KEYS: seq, meta, z, w, e, i, mh, mj. ARGV: msg key, n, bytes, max entries, max bytes,
 * msg head rest, msg JSON, then per entry: head rest, item JSON, priority.
 * Returns {first seq, entries, bytes}; error FULL when the bounds would be passed.
 */
export const ACCEPT = `${LIB}
local key, n, b = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local had = redis.call('HGET', KEYS[7], key)
if had then
  local f = figures(KEYS[2])
  return {tonumber(string.match(had, '^{"s":(%d+)')), f[1], f[2]}
end
local f = figures(KEYS[2])
if f[1] + n > tonumber(ARGV[4]) or f[2] + b > tonumber(ARGV[5]) then
  return redis.error_reply('FULL ' .. f[1] .. ' entries and ' .. f[2] .. ' bytes kept')
end
local first = redis.call('INCRBY', KEYS[1], n) - n + 1
redis.call('HSET', KEYS[7], key, withSeq(ARGV[6], first))
redis.call('HSET', KEYS[8], key, ARGV[7])
for i = 0, n - 1 do
  local id, seq, at = key .. '/' .. i, first + i, 8 + i * 3
  redis.call('HSET', KEYS[5], id, withSeq(ARGV[at], seq))
  redis.call('HSET', KEYS[6], id, ARGV[at + 1])
  redis.call('ZADD', KEYS[3], num(seq), id)
  redis.call('ZADD', KEYS[4], num(tonumber(ARGV[at + 2]) * 1e15 + seq), id)
end
redis.call('HINCRBY', KEYS[2], 'entries', n)
redis.call('HINCRBY', KEYS[2], 'bytes', b)
return {first, f[1] + n, f[2] + b}`;

/**
 * KEYS: lease, meta, w, e, s, a. ARGV: owner:fence, seen ('' none), attempt JSON, ids...
 * Every entry must be waiting (or already in this attempt: a second run), else STALE and
 * nothing changes; the lease must be this instance's, else FENCED. Acceptance order across
 * the fleet: the caller read every entry up to seq `seen`; per priority, the entries waiting
 * in `w` with a seq after `seen` and up to the newest of this send must all be in it, else
 * UNSEEN (an older entry another instance accepted that the caller has not read: it reads
 * and marks again). One ZCOUNT per priority of the send: no entry read beyond the send's.
 */
export const MARK_SENDING = `${LIB}
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('FENCED this instance does not hold the outbox lease') end
local want = 's' .. ARGV[3]
for i = 4, #ARGV do
  local st = redis.call('HGET', KEYS[5], ARGV[i])
  if redis.call('HEXISTS', KEYS[4], ARGV[i]) == 0 then return redis.error_reply('STALE an entry is gone (forgotten)') end
  if st and st ~= 'w' and st ~= want then return redis.error_reply('STALE an entry is no longer waiting') end
end
local seen = tonumber(ARGV[2])
if seen then
  local top, mine = {}, {}
  for i = 4, #ARGV do
    local seq, p = string.match(redis.call('HGET', KEYS[4], ARGV[i]), '^{"s":(%d+),"p":(%d)')
    seq, p = tonumber(seq), tonumber(p)
    if seq > seen then
      top[p] = math.max(top[p] or 0, seq)
      if redis.call('ZSCORE', KEYS[3], ARGV[i]) then mine[p] = (mine[p] or 0) + 1 end
    end
  end
  for p, hi in pairs(top) do
    if redis.call('ZCOUNT', KEYS[3], num(p * 1e15 + seen + 1), num(p * 1e15 + hi)) > (mine[p] or 0) then
      return redis.error_reply('UNSEEN an older entry of this priority, accepted by another instance, is not read yet')
    end
  end
end
for i = 4, #ARGV do
  if redis.call('HGET', KEYS[5], ARGV[i]) ~= want then
    redis.call('HSET', KEYS[5], ARGV[i], want)
    redis.call('HINCRBY', KEYS[6], ARGV[i], 1)
    redis.call('ZREM', KEYS[3], ARGV[i])
  end
end
return figures(KEYS[2])`;

/**
 * KEYS: lease, meta, w, e, s, sa. ARGV: owner:fence ('' when not held), then per end: id,
 * outcome JSON, 1 when it is a send's answer (its attempt is kept for sentAt). An entry that
 * is sending ends only with the lease held (FENCED, nothing changes). One writer wins: an
 * entry ended with another outcome, or forgotten, is not ended again and its id is returned
 * (taken: another instance, the lease's next holder, ended it and emits its msg); one ended
 * with this very outcome is this call's run again. Returns {entries, bytes, taken ids...}.
 */
export const END = `${LIB}
local held = ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1]
for i = 2, #ARGV, 3 do
  local st = redis.call('HGET', KEYS[5], ARGV[i])
  if st and string.sub(st, 1, 1) == 's' and not held then
    return redis.error_reply('FENCED an entry being sent ends only by the lease holder')
  end
end
local ended, taken = 0, {}
for i = 2, #ARGV, 3 do
  local id, want = ARGV[i], 'e' .. ARGV[i + 1]
  local st = redis.call('HGET', KEYS[5], id)
  if redis.call('HEXISTS', KEYS[4], id) == 0 or (st and string.sub(st, 1, 1) == 'e' and st ~= want) then
    table.insert(taken, id)
  elseif st ~= want then
    if st and string.sub(st, 1, 1) == 's' and ARGV[i + 2] == '1' then redis.call('HSET', KEYS[6], id, string.sub(st, 2)) end
    redis.call('HSET', KEYS[5], id, want)
    redis.call('ZREM', KEYS[3], id)
    ended = ended + 1
  end
end
if ended > 0 then redis.call('HINCRBY', KEYS[2], 'entries', -ended) end
local out = figures(KEYS[2])
for _, id in ipairs(taken) do table.insert(out, id) end
return out`;

/** KEYS: lease, meta, w, e, s. ARGV: owner:fence, ids... Sending entries wait again in their place (FENCED without the lease). */
export const BACK_TO_WAITING = `${LIB}
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('FENCED this instance does not hold the outbox lease') end
for i = 2, #ARGV do
  local st = redis.call('HGET', KEYS[5], ARGV[i])
  local head = redis.call('HGET', KEYS[4], ARGV[i])
  if st and head and string.sub(st, 1, 1) == 's' then
    local seq, p = string.match(head, '^{"s":(%d+),"p":(%d)')
    redis.call('HSET', KEYS[5], ARGV[i], 'w')
    redis.call('ZADD', KEYS[3], num(tonumber(p) * 1e15 + tonumber(seq)), ARGV[i])
  end
end
return figures(KEYS[2])`;

/** KEYS: meta, z, w, e, i, s, a, sa, mh, mj, mo. ARGV: msg keys. Each msg and its entries are deleted. */
export const FORGET = `${LIB}
for k = 1, #ARGV do
  local head = redis.call('HGET', KEYS[9], ARGV[k])
  if head then
    local n, b = string.match(head, '"n":(%d+),"b":(%d+)')
    local open = 0
    for i = 0, tonumber(n) - 1 do
      local id = ARGV[k] .. '/' .. i
      local st = redis.call('HGET', KEYS[6], id)
      if redis.call('HEXISTS', KEYS[4], id) == 1 and not (st and string.sub(st, 1, 1) == 'e') then open = open + 1 end
      redis.call('ZREM', KEYS[2], id)
      redis.call('ZREM', KEYS[3], id)
      for h = 4, 8 do redis.call('HDEL', KEYS[h], id) end
    end
    redis.call('HDEL', KEYS[9], ARGV[k])
    redis.call('HDEL', KEYS[10], ARGV[k])
    redis.call('HDEL', KEYS[11], ARGV[k])
    if open > 0 then redis.call('HINCRBY', KEYS[1], 'entries', -open) end
    redis.call('HINCRBY', KEYS[1], 'bytes', -tonumber(b))
  end
end
return figures(KEYS[1])`;

/**
 * KEYS: z, e, s, a, sa, mh, meta, seq. ARGV: after seq, most entries, most bytes. One page of
 * the live entries after a seq, in seq order, within the bytes (at least one entry):
 * {entries, bytes, next seq, then per entry: id, seq, head, state|false, attempts|false,
 * answered attempt|false, msg head (entry 0 only)|false}.
 */
export const PAGE = `${LIB}
local z = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local f = figures(KEYS[7])
local out = {f[1], f[2], tonumber(redis.call('GET', KEYS[8]) or '0') + 1}
local size = 0
for j = 1, #z, 2 do
  local id, seq = z[j], tonumber(z[j + 1])
  local head = redis.call('HGET', KEYS[2], id) or false
  local st = redis.call('HGET', KEYS[3], id) or false
  local a = redis.call('HGET', KEYS[4], id) or false
  local sa = redis.call('HGET', KEYS[5], id) or false
  local mh = false
  if string.sub(id, -2) == '/0' then mh = redis.call('HGET', KEYS[6], string.sub(id, 1, -3)) or false end
  local add = #id + (head and #head or 0) + (st and #st or 0) + (sa and #sa or 0) + (mh and #mh or 0) + 40
  if size > 0 and size + add > tonumber(ARGV[3]) then break end
  size = size + add
  for _, v in ipairs({id, seq, head, st, a, sa, mh}) do table.insert(out, v) end
end
return out`;

/**
 * KEYS: meta, z, s, e, w. ARGV: most entries to look at. What an instance that does not drain
 * shows (fleet.ts): {entries, bytes, acceptance time of the oldest entry not ended (-1: none)}.
 * The first entry not ended in seq order (within the first ARGV[1] of `z`: ended ones wait
 * there only until their msg is forgotten), else the oldest head of `w` per priority.
 */
export const SUMMARY = `${LIB}
local f = figures(KEYS[1])
local function at(id)
  local head = redis.call('HGET', KEYS[4], id)
  return head and tonumber(string.match(head, '"at":(%d+)')) or nil
end
local oldest = -1
if f[1] > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)) do
    local st = redis.call('HGET', KEYS[3], id)
    if not (st and string.sub(st, 1, 1) == 'e') then
      local t = at(id)
      if t then oldest = t break end
    end
  end
  if oldest < 0 then
    for p = 0, 9 do
      local w = redis.call('ZRANGEBYSCORE', KEYS[5], num(p * 1e15), '(' .. num((p + 1) * 1e15), 'LIMIT', 0, 1)
      local t = w[1] and at(w[1])
      if t and (oldest < 0 or t < oldest) then oldest = t end
    end
  end
end
return {f[1], f[2], oldest}`;

/**
 * KEYS: a hash. ARGV: most bytes, fields... Values of a prefix of the fields within the
 * bytes: per field its length (-1: absent) and its value, or '' when it alone is over the
 * bytes (read in slices with SLICE).
 */
export const VALUES = `local out, size = {}, 0
for i = 2, #ARGV do
  local n = redis.call('HSTRLEN', KEYS[1], ARGV[i])
  if n == 0 and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then n = -1 end
  if size > 0 and size + n > tonumber(ARGV[1]) then break end
  table.insert(out, n)
  if n > tonumber(ARGV[1]) then table.insert(out, '') else
    table.insert(out, n < 0 and '' or redis.call('HGET', KEYS[1], ARGV[i]))
    size = size + math.max(n, 0)
  end
end
return out`;

/** KEYS: a hash. ARGV: field, from (0-based), length. {total length (-1 absent), the slice}. */
export const SLICE = `local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return {-1, ''} end
local from = tonumber(ARGV[2])
return {#v, string.sub(v, from + 1, from + tonumber(ARGV[3]))}`;

/**
 * KEYS: meta, z, w, e, i, s, a, sa, mh, mj (FORGET's). ARGV: msg key. After an accept whose
 * reply was lost (the store's accept): the msg and its entries are deleted if none of them was
 * touched (no state, no attempt: no drainer marked it), else kept. Returns {0 never there |
 * 1 withdrawn | 2 kept (a drainer got there first), first seq (0: none), entries, bytes}.
 * Safe to run twice (a second run finds it gone, or touched).
 */
export const WITHDRAW = `${LIB}
local head = redis.call('HGET', KEYS[9], ARGV[1])
if not head then local f = figures(KEYS[1]) return {0, 0, f[1], f[2]} end
local first, n, b = string.match(head, '^{"s":(%d+).-"n":(%d+),"b":(%d+)')
for i = 0, tonumber(n) - 1 do
  local id = ARGV[1] .. '/' .. i
  if redis.call('HEXISTS', KEYS[6], id) == 1 or redis.call('HEXISTS', KEYS[7], id) == 1 then
    local f = figures(KEYS[1])
    return {2, tonumber(first), f[1], f[2]}
  end
end
for i = 0, tonumber(n) - 1 do
  local id = ARGV[1] .. '/' .. i
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  for h = 4, 8 do redis.call('HDEL', KEYS[h], id) end
end
redis.call('HDEL', KEYS[9], ARGV[1])
redis.call('HDEL', KEYS[10], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'entries', -tonumber(n))
redis.call('HINCRBY', KEYS[1], 'bytes', -tonumber(b))
local f = figures(KEYS[1])
return {1, 0, f[1], f[2]}`;


/**
 * KEYS: lease, mh, mo. ARGV: owner:fence, msg key, grace ms. One instance emits a msg's outcome
 * (fleet.ts): the one whose claim this script took, with the lease held. Returns 0: claimed
 * (emit it; this owner's claim again too), -1: not this instance's (the lease not held, or the
 * msg forgotten: emitted), or the ms to wait: another owner claimed it less than the grace ago
 * (the last holder, which emits and forgets it at once; once the grace is over it is taken: that
 * holder died before it forgot the msg, the outcome is emitted again, as after a kill).
 */
export const CLAIM = `if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HGET', KEYS[3], ARGV[2])
if cur then
  local owner, at = string.match(cur, '^(.*)@(%d+)$')
  local left = tonumber(ARGV[3]) - (now - tonumber(at or '0'))
  if owner ~= ARGV[1] and left > 0 then return left end
end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[1] .. '@' .. now)
return 0`;
