--- Takes `n` permits under `token` for `lease`, or answers what to wait on before asking again.
---
--- Beyond the books. A semaphore is the keys below (a turn key per waiting token), in
--- one hash slot (the Rust `Semaphore` derives them as `{name}:state`, …). Its capacity
--- is set by `set_capacity.lua`; until then every acquire answers NO_CAPACITY. A holding is
--- `token` -> its deadline (server clock) in `leases` and `token` -> its permits in
--- `held`, and `used` in `state` is their sum. First, up to `limit` holdings whose lease
--- ran out are reclaimed (their permits come back), and up to `limit` waiting places
--- whose lease ran out are dropped, anywhere in the queue. A token that holds permits
--- already gets its lease renewed, so a call sent again is answered as the first was.
--- Otherwise the permits are granted when `used` + `n` is at most the capacity and no
--- live waiting request is ahead (`token` is first in `queue`, or no one waits): a
--- request never passes one that waits in line, so a request for 5 is not starved by a
--- stream of requests for 1. Lowering the capacity below `used` drains: holders keep
--- their permits, and nothing is granted until enough come back. With `place`, a request
--- that is not granted takes a place in `queue` (or keeps its own) for `place` ms; each
--- call renews it, and a waiter that stops calling loses it. Without `place` it takes
--- none, and gives up one it held; it is noted in `places` for two seconds instead (the
--- longest it blocks, twice), so that a release knows to ring for it. A caller that is
--- not granted blocks for at most the reply's ms (`BLPOP <key> <seconds>`), then calls
--- again: on the turn key of the one just ahead of it in line, which that one rings when
--- it leaves the line; or, first in line or out of line, on the bell, which a release, a
--- reclaimed lease or a capacity raise rings once for each permit that comes back, for
--- as many as wait. A caller granted from the line rings its own turn key for the one
--- behind it. A dropped place wakes nobody: the reply's ms already end at the earliest
--- place or lease that can lapse.
--- @key state hash {<name>}:state     capacity, used (the permits held), seq (the queue's last ticket)
--- @key leases zset {<name>}:leases   token -> the holding's deadline (ms, server clock)
--- @key held hash {<name>}:held       token -> the permits it holds
--- @key queue zset {<name>}:queue     waiting token -> its ticket, in arrival order
--- @key places zset {<name>}:places   waiting token -> its place's deadline (ms, server clock)
--- @key bell list {<name>}:bell       rung when permits come back while anyone waits: the first in line blocks on it
--- @key turn list {<name>}:turn:<token>   rung when `token` leaves the line: the one behind it blocks on it
--- @arg token string hex:32           the holder's 128 random bits, as 32 hex digits
--- @arg n uint 1..=1000               the permits asked for
--- @arg lease ms 1..=10^15-1          how long the permits are held unless extended
--- @arg place ms? 1..=10^7            how long a place in the queue is kept; empty to take none
--- @arg limit uint 1..=100            the most lapsed holdings reclaimed, and places dropped
--- @return (uint?, string, uint)      the holding's deadline (ms, server clock), nil when not granted;
---   then the token whose turn key to block on (empty for the bell), and the ms to block at most
---   before asking again (0 when granted)
--- @error BAD_ARGS                    not 7 keys and 5 arguments
--- @error BAD_TOKEN                   not 32 hex digits
--- @error BAD_N       not an integer within its range; or above the capacity, or not what `token` holds
--- @error BAD_LEASE                   not whole milliseconds within its range
--- @error BAD_PLACE                   not whole milliseconds within its range (or empty)
--- @error BAD_LIMIT                   not an integer within its range
--- @error BAD_KEYS                    a key not named as its template says
--- @error NO_CAPACITY                 the semaphore has no capacity yet: set it with `set_capacity.lua`
--- @error BAD_STATE   `state` holds a field these scripts never write, or less in use than is reclaimed
--- @error BAD_HELD                    `held` holds a count of permits that is not from 1 to 1000
--- @uses semaphore_state held_permits now_ms ring_bell shown
--- @clock server
--- @complexity O(M × log N), N = the holdings and waiters, M = `limit`
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and semaphore/_shared.lua of the scripts folder).
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
-- Rings bell `bell_key` (a list) until it holds `count` rings (at most 1,000), `rings` (its
-- LLEN, read before the first write) being there already: each ring wakes the one waiter
-- blocked on it the longest (BLPOP), which runs its script again, and the others keep
-- blocking. With nobody blocked a ring stays until the next waiter blocks, so a ring
-- between a "not yet" and its block is not missed, for `ms`: no longer than a waiter
-- blocks before it runs again anyway.
local function ring_bell(bell_key, rings, count, ms)
  local more = {}
  for i = 1, math.min(count, 1000) - rings do
    more[i] = 1
  end
  if #more > 0 then
    redis.call('RPUSH', bell_key, unpack(more))
    redis.call('PEXPIRE', bell_key, ms)
  end
end
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- The semaphore's state as `state_key` keeps it: { capacity = nil when never set, used =
-- the permits held, seq = the queue's last ticket }; nil and an error reply when a field
-- holds something these scripts never write. Reads only.
local function semaphore_state(state_key)
  local fields = redis.call('HMGET', state_key, 'capacity', 'used', 'seq')
  local rules = { { 'capacity', 1000 }, { 'used', 1000 }, { 'seq', 9007199254740990 } }
  local st = { used = 0, seq = 0 }
  local known = 0
  for i, rule in ipairs(rules) do
    if fields[i] then
      known = known + 1
      local value = safe_integer(fields[i], 0, rule[2])
      if not value then
        return nil, redis.error_reply('BAD_STATE ' .. shown(state_key) .. ' holds ' .. rule[1] .. ' = '
          .. shown(fields[i]) .. ', not a whole number from 0 to ' .. rule[2])
      end
      st[rule[1]] = value
    end
  end
  if redis.call('HLEN', state_key) ~= known then
    return nil, redis.error_reply('BAD_STATE ' .. shown(state_key)
      .. ' holds a field these scripts never write (they write capacity, used and seq)')
  end
  return st
end
-- The permits `holder` holds as `held_key` keeps them, 0 when none; nil and an error reply
-- when its count is not one these scripts write (1 to 1000). Reads only.
local function held_permits(held_key, holder)
  local count = redis.call('HGET', held_key, holder)
  if not count then
    return 0
  end
  local permits = safe_integer(count, 1, 1000)
  if not permits then
    return nil, redis.error_reply('BAD_HELD ' .. shown(held_key) .. ' holds ' .. shown(count) .. ' permits for '
      .. shown(holder) .. ', not a whole number from 1 to 1000')
  end
  return permits
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 7 or #ARGV ~= 5 then
  return redis.error_reply('BAD_ARGS expected 7 keys and 5 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local leases = KEYS[2]
local held = KEYS[3]
local queue = KEYS[4]
local places = KEYS[5]
local bell = KEYS[6]
local turn = KEYS[7]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local n = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not n or n > 1000 then
  return redis.error_reply('BAD_N must be an integer from 1 to 1000, got ' .. shown(ARGV[2]))
end
local lease = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
local place = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if ARGV[4] ~= '' and (not place or place > 10000000) then
  return redis.error_reply('BAD_PLACE must be whole milliseconds from 1 to 10000000, or empty, got ' .. shown(ARGV[4]))
end
local limit = tonumber(string.match(ARGV[5], '^[1-9]%d*$'))
if not limit or limit > 100 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 100, got ' .. shown(ARGV[5]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):state$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:state, got ' .. shown(state))
end
if leases ~= tag_of_keys .. ':leases' or held ~= tag_of_keys .. ':held' or queue ~= tag_of_keys .. ':queue' or
    places ~= tag_of_keys .. ':places' or bell ~= tag_of_keys .. ':bell' then
  for i, each in ipairs({ ':leases', ':held', ':queue', ':places', ':bell' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in state, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
if turn ~= tag_of_keys .. ':turn:' .. token then
  return redis.error_reply(
      'BAD_KEYS KEYS[7] must be {<name>}:turn:<token> with <name> as in state and <token> = ARGV[1], got ' ..
      shown(turn))
end
-- End of the generated input checks.
-- Reads first: a key of another type fails here, and foreign data is refused, before
-- anything is written.
local rings = redis.call('LLEN', bell)
local turn_rings = redis.call('LLEN', turn)
local st, err = semaphore_state(state)
if not st then
  return err
end
if not st.capacity then
  return redis.error_reply('NO_CAPACITY ' .. shown(state) .. ' has no capacity: set it first')
end
if n > st.capacity then
  return redis.error_reply('BAD_N ' .. n .. ' permits is more than the capacity, ' .. st.capacity)
end
local now = now_ms()

-- Plan, reading only: the lapsed holdings, this token's own, the lapsed places.
local reclaim, freed = {}, 0
local seen = {}
for _, lapsed in ipairs(redis.call('ZRANGE', leases, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
  local permits, bad = held_permits(held, lapsed)
  if not permits then
    return bad
  end
  reclaim[#reclaim + 1] = lapsed
  seen[lapsed] = true
  freed = freed + permits
end
local mine, bad = held_permits(held, token)
if not mine then
  return bad
end
local my_deadline = tonumber(redis.call('ZSCORE', leases, token))
local renew = mine > 0 and not (my_deadline and my_deadline <= now)
if mine > 0 and not renew and not seen[token] then
  -- Its own lease ran out, beyond the `limit` reclaimed: it goes back too.
  reclaim[#reclaim + 1] = token
  freed = freed + mine
end
if renew and mine ~= n then
  return redis.error_reply('BAD_N ' .. shown(token) .. ' holds ' .. mine .. ' permits, not ' .. n)
end
if freed > st.used then
  return redis.error_reply('BAD_STATE ' .. shown(state) .. ' has ' .. st.used .. ' permits in use, fewer than the '
    .. freed .. ' of its lapsed holdings')
end
local drop, dropping = {}, {}
for _, lapsed in ipairs(redis.call('ZRANGE', places, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)) do
  drop[#drop + 1] = lapsed
  dropping[lapsed] = true
end
-- The first live waiter: the queue is walked from its front, at most `limit` entries;
-- an entry without a live place before it is dropped too.
local first
local front = redis.call('ZRANGE', queue, 0, limit - 1)
for _, waiter in ipairs(front) do
  local deadline = tonumber(redis.call('ZSCORE', places, waiter))
  if deadline and deadline > now then
    first = waiter
    break
  end
  if not dropping[waiter] then
    drop[#drop + 1] = waiter
    dropping[waiter] = true
  end
end
-- More entries than walked, none live: whether one waits further back is unknown yet.
local blocked = not first and redis.call('ZCARD', queue) > #front
local queued = redis.call('ZSCORE', queue, token) and not dropping[token]
local noted = not queued and redis.call('ZSCORE', places, token) and not dropping[token]

local used = st.used - freed
local granted = renew
  or (used + n <= st.capacity and not blocked and (not first or first == token))

-- Writes.
for _, lapsed in ipairs(reclaim) do
  redis.call('ZREM', leases, lapsed)
  redis.call('HDEL', held, lapsed)
end
for _, waiter in ipairs(drop) do
  redis.call('ZREM', queue, waiter)
  redis.call('ZREM', places, waiter)
end
local seq = st.seq
local ahead = ''
if granted then
  if not renew then
    used = used + n
    redis.call('HSET', held, token, n)
  end
  redis.call('ZADD', leases, now + lease, token)
  if queued or noted then
    redis.call('ZREM', queue, token)
    redis.call('ZREM', places, token)
  end
  -- The one behind it in line blocks on its turn key: it is first now.
  if queued and redis.call('ZCARD', queue) > 0 then
    ring_bell(turn, turn_rings, 1, 1000)
  end
elseif place then
  if not queued then
    seq = seq + 1
    redis.call('ZADD', queue, seq, token)
  end
  redis.call('ZADD', places, now + place, token)
  local rank = redis.call('ZRANK', queue, token)
  if rank > 0 then
    ahead = redis.call('ZRANGE', queue, rank - 1, rank - 1)[1]
  end
else
  if queued then
    redis.call('ZREM', queue, token)
  end
  redis.call('ZADD', places, now + 2000, token)
end
if used ~= st.used or seq ~= st.seq then
  redis.call('HSET', state, 'used', used, 'seq', seq)
end
-- Reclaimed permits came back: a ring for each, for as many others as wait.
if freed > 0 then
  ring_bell(bell, rings, math.min(freed, redis.call('ZCARD', places) - (granted and 0 or 1)), 60000)
end
if granted then
  return { now + lease, '', 0 }
end

-- How long to block: until the first lease or place that may run out, and half a place.
local block = 1000
local soonest = redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')[2]
if soonest then
  block = math.min(block, tonumber(soonest) - now)
end
soonest = redis.call('ZRANGE', places, 0, 0, 'WITHSCORES')[2]
if soonest then
  block = math.min(block, tonumber(soonest) - now)
end
if place then
  block = math.min(block, math.floor(place / 2))
end
return { false, ahead, math.max(1, math.floor(block)) }
