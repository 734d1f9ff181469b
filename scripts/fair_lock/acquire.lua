--- Takes the lock for `token` in its turn (`fifo`) or whenever it is free (`any`), or says how long to wait.
---
--- Beyond the book. With `fifo` the first call joins the queue at its back (`queue`:
--- token -> ticket, in order of arrival), and the lock goes to the first in line. With
--- `any` the caller barges: it takes the lock whenever it is free and nobody waits in
--- line, the way a `SET NX` lock does, but woken by the bell rather than polling. Either
--- way a caller that waits has a place that lasts `place_lease` (`places`: token ->
--- deadline, server clock), which each later call renews: a waiter keeps it by waiting
--- (calling again at least every `place_lease`, which the reply's wait allows), and one
--- that dies loses it within one `place_lease`. The lock, once taken, lasts `lease`, and
--- its fencing token is the next number of the `fence` counter, which never goes back
--- (`fenced_lock/acquire`'s rule). First, at most `limit` lapsed places go: the first in
--- line's when it lapsed, then the earliest lapsed anywhere. A caller that is not
--- granted blocks on the bell (`BLPOP <bell> <seconds>`, for at most the reply's ms) and
--- calls again: a release rings it once, which wakes the one waiter blocked longest, and a
--- woken waiter that cannot take the free lock rings it again for the next, a bounded
--- number of times. The holder calling again keeps the lock (its lease runs `lease` from
--- now) and its fencing token: the lock is not reentrant, one `release` frees it. A
--- waiter that gives up calls `cancel`. Uncontended (the lock free, nobody waiting) the
--- call takes the lock without touching the queue's keys.
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @key queue zset {<name>}:queue     waiting token -> ticket, in order of arrival (`fifo` callers)
--- @key places zset {<name>}:places   waiting token -> place deadline (ms, server clock), every waiter
--- @key fence string {<name>}:fence   the counter the fencing tokens come from; never deleted
--- @key bell list {<name>}:bell       rung once each time the lock frees while someone waits
--- @arg token string hex:32       the waiter's 128 random bits, the same for each call of one wait
--- @arg lease ms 1..=10^15-1      how long the lock lasts once taken
--- @arg place_lease ms 1..=10^15-1   how long the waiter's place lasts from this call
--- @arg limit uint 1..=1000       the most lapsed places dropped first
--- @arg order string fifo|any     first come first served, or barging
--- @return (uint, uint)           the fencing token (0: not yet), then the most ms to block on the bell
---   before calling again (for a 0)
--- @error BAD_ARGS                not 5 keys and 5 arguments
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_LEASE               not whole milliseconds within its range
--- @error BAD_PLACE_LEASE         not whole milliseconds within its range
--- @error BAD_LIMIT               not an integer within its range
--- @error BAD_ORDER               not one of its choices
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_OWNER               `owner` holds a field these scripts never write, or a value they did not write
--- @error BAD_FENCE               `fence` holds something other than a whole number from 0 to 2^53 - 2
--- @error BAD_QUEUE               the last ticket in `queue` is no whole number from 0 to 2^53 - 2
--- @default order fifo           FairLock::new: first come, first served
--- @uses ring_bell ring_for_next now_ms ms_until drop_lapsed expire_after_last lock_owner safe_integer shown
--- @clock server
--- @complexity O(M × log N), N = the waiters, M = `limit`
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and fair_lock/_shared.lua of the scripts folder).
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
-- A bad argument as an error shows it: its first 32 bytes, other than printable ASCII
-- escaped, and its length when it is longer.
local function shown(s)
  local head = string.gsub(string.sub(s, 1, 32), '[^%w%p ]', function(c)
    return string.format('\\%03d', string.byte(c))
  end)
  if #s > 32 then
    return '"' .. head .. '"... (' .. #s .. ' bytes)'
  end
  return '"' .. head .. '"'
end
-- Rings bell `bell_key` (a list) once, unless a ring already waits in it (`rings`, its
-- LLEN, read before the first write): the one waiter blocked on it the longest (BLPOP)
-- wakes and runs its script again, and the others keep blocking. With nobody blocked the
-- ring stays until the next waiter blocks, so a release between a "not yet" and its block
-- is not missed. The bell goes after a minute without a ring.
local function ring_bell(bell_key, rings)
  if rings == 0 then
    redis.call('RPUSH', bell_key, 1)
    redis.call('PEXPIRE', bell_key, 60000)
  end
end
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- The milliseconds from `now` to `deadline` (a zset score, maybe one another client
-- wrote), from 0 to a minute: what a waiter may block at most.
local function ms_until(deadline, now)
  local ms = math.floor(tonumber(deadline) - now)
  if ms ~= ms or ms < 0 then
    return 0
  end
  return math.min(ms, 60000)
end
-- Drops at most `most` members of zset `key` whose deadline is `now` or earlier (the
-- earliest first), but `keep` when given, and returns them, for the caller to drop what
-- goes with them.
local function drop_lapsed(key, now, most, keep)
  local lapsed = redis.call('ZRANGE', key, '-inf', now, 'BYSCORE', 'LIMIT', 0, most)
  for i = #lapsed, 1, -1 do
    if lapsed[i] == keep then
      table.remove(lapsed, i)
    end
  end
  if #lapsed > 0 then
    redis.call('ZREM', key, unpack(lapsed))
  end
  return lapsed
end
-- Lets zset `key` of deadlines (and `also_key`, when given) go once the latest deadline it
-- holds has passed, so that holds nobody releases leave no keys behind.
local function expire_after_last(key, also_key, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if not last then
    return
  end
  local ms = math.max(math.floor(tonumber(last) - now) + 1, 1)
  -- A deadline past every lease these scripts grant (another client's `inf`) keeps the key.
  if ms <= 2000000000000000 then
    redis.call('PEXPIRE', key, ms)
    if also_key then
      redis.call('PEXPIRE', also_key, ms)
    end
  end
end
-- The holder in hash `owner_key` (`t` its token, `f` its fencing token; the key's expiry
-- is the lease), read and checked before any write: the token and fence; or, for a lock
-- just freed with waiters, nil, nil and the passes left (`b`, see ring_for_next); nothing
-- when the lock is free; or nil, nil, nil and an error reply when the hash holds what
-- these scripts never write.
local function lock_owner(owner_key)
  local hold = redis.call('HMGET', owner_key, 't', 'f', 'b')
  local fields = redis.call('HLEN', owner_key)
  if fields == 0 then
    return nil
  end
  local t, f, b = hold[1], hold[2], hold[3]
  if fields == 1 and b and safe_integer(b, 0, 1000) then
    return nil, nil, tonumber(b)
  end
  if fields ~= 2 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
-- Wakes one waiter of the free lock in `owner_key` (ring_bell; `rings` as there), and lets up
-- to `passes` woken waiters that cannot take it (not first in line) ring again, so that
-- the one that can wakes even when another was blocked longer. The passes are kept in the
-- owner hash as `b` for a second: a waiter blocks at most that long before it runs its
-- script again anyway.
local function ring_for_next(owner_key, bell_key, rings, passes)
  redis.call('DEL', owner_key)
  redis.call('HSET', owner_key, 'b', math.min(passes, 1000))
  redis.call('PEXPIRE', owner_key, 1000)
  ring_bell(bell_key, rings)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 5 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 5 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local queue = KEYS[2]
local places = KEYS[3]
local fence = KEYS[4]
local bell = KEYS[5]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
local place_lease = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not place_lease or place_lease > 999999999999999 then
  return redis.error_reply(
      'BAD_PLACE_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
local limit = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not limit or limit > 1000 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 1000, got ' .. shown(ARGV[4]))
end
local order = ARGV[5]
if order ~= 'fifo' and order ~= 'any' then
  return redis.error_reply('BAD_ORDER must be one of fifo, any, got ' .. shown(order))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(owner, '^(.+):owner$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:owner, got ' .. shown(owner))
end
for i, each in ipairs({ ':queue', ':places', ':fence', ':bell' }) do
  if KEYS[i + 1] ~= tag_of_keys .. each then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in owner, got ' ..
        shown(KEYS[i + 1]))
  end
end
-- End of the generated input checks.
-- Everything read and checked before the first write (WRONGTYPE included).
local owner_token, owner_fence, passes, bad_owner = lock_owner(owner)
if bad_owner then
  return bad_owner
end
local last = redis.call('GET', fence)
if last and not safe_integer(last, 0, 9007199254740990) then
  return redis.error_reply('BAD_FENCE the fence counter holds ' .. shown(last) .. ', not a token count')
end
local tail = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')[2]
if tail and not safe_integer(tail, 0, 9007199254740990) then
  return redis.error_reply('BAD_QUEUE the last ticket of the queue is ' .. shown(tail) .. ', not a ticket')
end
local waiters = redis.call('ZCARD', places)
local rings = redis.call('LLEN', bell)

-- The lock is `token`'s for `lease`, under the fence's next number: the reply.
local function take()
  local fencing = redis.call('INCR', fence)
  redis.call('HSET', owner, 't', token, 'f', fencing)
  if passes then
    redis.call('HDEL', owner, 'b')
  end
  redis.call('PEXPIRE', owner, lease)
  return {fencing, 0}
end

-- Uncontended: the lock free and nobody waiting, so no place lapsed and none to keep. It
-- is taken at once, the queue's keys untouched (as joining and leaving would leave them).
if not owner_token and not tail and waiters == 0 then
  return take()
end
local now = now_ms()

-- Lapsed places go: the first in line's (so that the line moves), then any.
local gone = {}
local head = redis.call('ZRANGE', queue, 0, 0)[1]
if head then
  local deadline = redis.call('ZSCORE', places, head)
  if not deadline or tonumber(deadline) <= now then
    gone[1] = head
    waiters = waiters - redis.call('ZREM', places, head)
  end
end
local lapsed = drop_lapsed(places, now, limit - #gone)
for _, each in ipairs(lapsed) do
  gone[#gone + 1] = each
end
if #gone > 0 then
  redis.call('ZREM', queue, unpack(gone))
  waiters = waiters - #lapsed
  head = redis.call('ZRANGE', queue, 0, 0)[1]
end

if owner_token == token then
  redis.call('PEXPIRE', owner, lease)
  return {owner_fence, 0}
end

if order == 'fifo' and not redis.call('ZSCORE', queue, token) then
  head = head or token
  redis.call('ZADD', queue, (tonumber(tail) or 0) + 1, token)
end
if not owner_token and head == (order == 'fifo' and token or nil) then
  redis.call('ZREM', places, token)
  if order == 'fifo' then
    redis.call('ZREM', queue, token)
  end
  expire_after_last(places, queue, now)
  return take()
end
if redis.call('ZADD', places, now + place_lease, token) == 1 then
  waiters = waiters + 1
end
expire_after_last(places, queue, now)

-- Not yet. A free lock's next holder is on its way when it was rung for; when places
-- went (the first in line may be new), or this caller was rung in its stead, ring again.
if not owner_token then
  if #gone > 0 then
    ring_for_next(owner, bell, rings, waiters)
  elseif passes and passes > 0 and rings == 0 then
    redis.call('HSET', owner, 'b', passes - 1)
    ring_bell(bell, rings)
  end
end

-- Wait for the holder's lease, or for the first in line to take the lock or lose its
-- place; and call again in time to keep this place.
local wait_ms
if owner_token then
  wait_ms = ms_until(now + redis.call('PTTL', owner), now)
else
  wait_ms = ms_until(redis.call('ZSCORE', places, head) or now, now)
end
return {0, math.min(wait_ms, math.floor(place_lease / 2))}
