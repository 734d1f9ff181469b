--- Takes the lock for `token` when its turn has come, first come first served, or keeps its place in the queue.
---
--- Beyond the book. The first call joins the queue at its back (`queue`: token -> ticket,
--- in order of arrival) with a place that lasts `place_lease` (`places`: token ->
--- deadline, server clock). Each later call renews the place, so a waiter keeps its place
--- by waiting (calling again at least every `place_lease`, which the reply's wait allows),
--- and a waiter that dies loses it within one `place_lease`. The call takes the lock when
--- the lock is free and the token is first in the queue; the lock then lasts `lease` and
--- its fencing token is the next number of the `fence` counter, which never goes back
--- (`fenced_lock/acquire`'s rule). First, at most `limit` lapsed places go, wherever they
--- are in the queue: lapsed places at the head first, then the earliest lapsed anywhere;
--- dropping any wakes the waiters. The holder calling again keeps the lock (its lease runs
--- `lease` from now) and its fencing token: the lock is not reentrant, one `release`
--- frees it. A waiter that gives up calls `cancel`.
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @key queue zset {<name>}:queue     waiting token -> ticket, in order of arrival
--- @key places zset {<name>}:places   waiting token -> place deadline (ms, server clock)
--- @key fence string {<name>}:fence   the counter the fencing tokens come from; never deleted
--- @key wake stream {<name>}:wake     the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the waiter's 128 random bits, the same for each call of one wait
--- @arg lease ms 1..=10^15-1      how long the lock lasts once taken
--- @arg place_lease ms 1..=10^15-1   how long the waiter's place lasts from this call
--- @arg limit uint 1..=1000       the most lapsed places dropped first
--- @return (uint, string, uint)   the fencing token (0: not yet), then the wake stream's last id and the
---   most ms to block on it before calling again (both for a 0)
--- @error BAD_ARGS                not 5 keys and 4 arguments
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_LEASE               not whole milliseconds within its range
--- @error BAD_PLACE_LEASE         not whole milliseconds within its range
--- @error BAD_LIMIT               not an integer within its range
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_OWNER               `owner` holds a field these scripts never write, or a value they did not write
--- @error BAD_FENCE               `fence` holds something other than a whole number from 0 to 2^53 - 2
--- @error BAD_QUEUE               the last ticket in `queue` is no whole number from 0 to 2^53 - 2
--- @uses wake_id wake_waiters now_ms ms_until drop_lapsed expire_after_last lock_owner safe_integer shown
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
-- The last id of wake stream `wake_key`, '0-0' when it has none. A script that answers
-- "not yet" returns it, and the waiter blocks with XREAD from it until wake_waiters adds
-- an entry. Reads only: call it before the first write (a key of another type is
-- refused with WRONGTYPE there).
local function wake_id(wake_key)
  local last = redis.call('XREVRANGE', wake_key, '+', '-', 'COUNT', 1)[1]
  return last and last[1] or '0-0'
end
-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
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
-- is the lease), read and checked before any write: the token and fence, or nothing when
-- the lock is free; or nil, nil and an error reply when the hash holds what these scripts
-- never write.
local function lock_owner(owner_key)
  local hold = redis.call('HMGET', owner_key, 't', 'f')
  local fields = redis.call('HLEN', owner_key)
  if fields == 0 then
    return nil
  end
  local t, f = hold[1], hold[2]
  if fields ~= 2 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local queue = KEYS[2]
local places = KEYS[3]
local fence = KEYS[4]
local wake = KEYS[5]
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
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(owner, '^(.+):owner$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:owner, got ' .. shown(owner))
end
for i, each in ipairs({ ':queue', ':places', ':fence', ':wake' }) do
  if KEYS[i + 1] ~= tag_of_keys .. each then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in owner, got ' ..
        shown(KEYS[i + 1]))
  end
end
-- End of the generated input checks.
-- Everything read and checked before the first write (WRONGTYPE included).
local id = wake_id(wake)
local owner_token, owner_fence, bad_owner = lock_owner(owner)
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

-- The lock is `token`'s for `lease`, under the fence's next number: the reply.
local function take(wake_last)
  local fencing = redis.call('INCR', fence)
  redis.call('HSET', owner, 't', token, 'f', fencing)
  redis.call('PEXPIRE', owner, lease)
  return {fencing, wake_last, 0}
end

-- Uncontended: the lock free and nobody in line, so no place lapsed and none to keep. It
-- is taken at once, the queue's keys untouched (as joining and leaving would leave them).
if not owner_token and not tail and waiters == 0 then
  return take(id)
end
local now = now_ms()

-- Lapsed places go: at the head first (so that the queue moves), then anywhere.
local heads = redis.call('ZRANGE', queue, 0, limit - 1)
local gone = {}
if #heads > 0 then
  local deadlines = redis.call('ZMSCORE', places, unpack(heads))
  for i, head in ipairs(heads) do
    if deadlines[i] and tonumber(deadlines[i]) > now then
      break
    end
    gone[i] = head
  end
end
local dropped = #gone
if dropped > 0 then
  redis.call('ZREM', queue, unpack(gone))
  redis.call('ZREM', places, unpack(gone))
end
if dropped < limit then
  local lapsed = drop_lapsed(places, now, limit - dropped)
  if #lapsed > 0 then
    redis.call('ZREM', queue, unpack(lapsed))
    dropped = dropped + #lapsed
  end
end
if dropped > 0 then
  wake_waiters(wake)
  id = wake_id(wake)
end

if owner_token == token then
  redis.call('PEXPIRE', owner, lease)
  return {owner_fence, id, 0}
end

-- Join at the back, or keep the place.
if not redis.call('ZSCORE', queue, token) then
  redis.call('ZADD', queue, (tonumber(tail) or 0) + 1, token)
end
redis.call('ZADD', places, now + place_lease, token)

if not owner_token and redis.call('ZRANGE', queue, 0, 0)[1] == token then
  redis.call('ZREM', queue, token)
  redis.call('ZREM', places, token)
  expire_after_last(places, queue, now)
  return take(id)
end
expire_after_last(places, queue, now)

-- Wait for the holder's lease, or for the first waiter to take the lock or lose its place;
-- and call again in time to keep this place.
local wait_ms
if owner_token then
  wait_ms = ms_until(now + redis.call('PTTL', owner), now)
else
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  wait_ms = ms_until(redis.call('ZSCORE', places, head) or now, now)
end
return {0, id, math.min(wait_ms, math.floor(place_lease / 2))}
