--- Takes the lock for `token` in its turn (`fifo`) or whenever it is free (`any`), or says what to wait on.
---
--- Beyond the book. With `fifo` the first call joins the queue at its back (`queue`:
--- token -> ticket, in order of arrival), and the lock goes to the first in line. With
--- `any` the caller barges: it takes the lock whenever it is free and nobody waits in
--- line, as a `SET NX` lock does, but woken rather than polling. Either way a caller that
--- waits has a place that lasts `place_lease` (`places`: token -> deadline, server
--- clock), which each later call renews: a waiter keeps it by waiting (calling again at
--- least every `place_lease`, which the reply's wait allows), and one that dies loses it
--- within one `place_lease`. The lock, once taken, lasts `lease`, and its fencing token is
--- the next number of the `fence` counter, which never goes back (`fenced_lock/acquire`'s
--- rule). First, at most `limit` lapsed places go: the first in line's when it lapsed,
--- then the earliest lapsed anywhere. A caller in line that is not granted blocks on the
--- turn key of the one just ahead of it (the holder, for the first in line), which that
--- one's `release` or `cancel` rings: `BLPOP {<name>}:turn:<ahead> <seconds>`, for at
--- most the reply's ms, then it calls again. So a release wakes the next in line alone,
--- and a waiter whose place lapses wakes nobody. A barging caller blocks on the bell
--- (`BLPOP {<name>}:bell <seconds>`), which a release rings once while bargers wait. The
--- holder calling again keeps the lock (its lease runs `lease` from now) and its fencing
--- token: the lock is not reentrant, one `release` frees it. A waiter that gives up calls
--- `cancel`. Uncontended (the lock free, nobody waiting) the call takes the lock without
--- touching the queue's keys.
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @key queue zset {<name>}:queue     waiting token -> ticket, in order of arrival (`fifo` callers)
--- @key places zset {<name>}:places   waiting token -> place deadline (ms, server clock), every waiter
--- @key fence string {<name>}:fence   the counter the fencing tokens come from; never deleted
--- @arg token string hex:32       the waiter's 128 random bits, the same for each call of one wait
--- @arg lease ms 1..=10^15-1      how long the lock lasts once taken
--- @arg place_lease ms 1..=10^15-1   how long the waiter's place lasts from this call
--- @arg limit uint 1..=1000       the most lapsed places dropped first
--- @arg order string fifo|any     first come first served, or barging
--- @return (uint, string, uint)   the fencing token (0: not yet); then, for a 0, the token whose turn key
---   to block on (`{<name>}:turn:<token>`; empty for the bell, `{<name>}:bell`), and the most ms to
---   block before calling again
--- @error BAD_ARGS                not 4 keys and 5 arguments
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
--- @uses now_ms ms_until drop_lapsed expire_after_last lock_owner safe_integer shown
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
  local all = redis.call('HGETALL', owner_key)
  if #all == 0 then
    return nil
  end
  local hold = {}
  for i = 1, #all, 2 do
    hold[all[i]] = all[i + 1]
  end
  local t, f = hold.t, hold.f
  if #all ~= 4 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 5 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 5 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local queue = KEYS[2]
local places = KEYS[3]
local fence = KEYS[4]
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
if queue ~= tag_of_keys .. ':queue' or places ~= tag_of_keys .. ':places' or fence ~= tag_of_keys .. ':fence' then
  for i, each in ipairs({ ':queue', ':places', ':fence' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in owner, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- Everything read and checked before the first write (WRONGTYPE included).
local owner_token, owner_fence, bad_owner = lock_owner(owner)
if bad_owner then
  return bad_owner
end
local last = redis.call('GET', fence)
if last and not safe_integer(last, 0, 9007199254740990) then
  return redis.error_reply('BAD_FENCE the fence counter holds ' .. shown(last) .. ', not a token count')
end
local waiters = redis.call('ZCARD', places)
local in_line = redis.call('ZCARD', queue)

-- The lock is `token`'s for `lease`, under the fence's next number: the reply.
local function take()
  local fencing = redis.call('INCR', fence)
  redis.call('HSET', owner, 't', token, 'f', fencing)
  redis.call('PEXPIRE', owner, lease)
  return {fencing, '', 0}
end

-- Uncontended: the lock free and nobody waiting, so no place lapsed and none to keep. It
-- is taken at once, the queue's keys untouched (as joining and leaving would leave them).
if not owner_token and waiters == 0 and in_line == 0 then
  return take()
end
local tail = redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')[2]
if tail and not safe_integer(tail, 0, 9007199254740990) then
  return redis.error_reply('BAD_QUEUE the last ticket of the queue is ' .. shown(tail) .. ', not a ticket')
end
local now = now_ms()

-- Lapsed places go: the first in line's (so that the line moves), then any.
local gone = {}
local head = redis.call('ZRANGE', queue, 0, 0)[1]
if head then
  local deadline = redis.call('ZSCORE', places, head)
  if not deadline or tonumber(deadline) <= now then
    gone[1] = head
    redis.call('ZREM', places, head)
  end
end
for _, each in ipairs(drop_lapsed(places, now, limit - #gone)) do
  gone[#gone + 1] = each
end
if #gone > 0 then
  redis.call('ZREM', queue, unpack(gone))
  head = redis.call('ZRANGE', queue, 0, 0)[1]
end

if owner_token == token then
  redis.call('PEXPIRE', owner, lease)
  return {owner_fence, '', 0}
end

-- Whom the caller waits behind: in line, the one just ahead (the holder, for the first);
-- barging, the bell ('').
local ahead = ''
if order == 'fifo' then
  local rank = redis.call('ZRANK', queue, token)
  if not rank then
    redis.call('ZADD', queue, (tonumber(tail) or 0) + 1, token)
    rank = redis.call('ZRANK', queue, token)
  end
  if rank > 0 then
    ahead = redis.call('ZRANGE', queue, rank - 1, rank - 1)[1]
  elseif owner_token then
    ahead = owner_token
  else
    redis.call('ZREM', queue, token)
  end
end
if ahead == '' and not owner_token and (order == 'fifo' or not head) then
  -- Leaving keeps the keys' expiry: it is at the latest deadline still, or later.
  redis.call('ZREM', places, token)
  return take()
end
redis.call('ZADD', places, now + place_lease, token)
expire_after_last(places, queue, now)

-- Not yet: wait for the holder's lease, or for the place of the one ahead (the first in
-- line, for a barging caller) to lapse; and call again in time to keep this place.
local until_ms
if owner_token and (ahead == owner_token or ahead == '') then
  until_ms = ms_until(now + redis.call('PTTL', owner), now)
else
  until_ms = ms_until(redis.call('ZSCORE', places, ahead ~= '' and ahead or head) or now, now)
end
return {0, ahead, math.min(until_ms, math.floor(place_lease / 2))}
