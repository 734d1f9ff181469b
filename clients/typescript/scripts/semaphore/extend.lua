--- Sets the lease of the permits `token` holds to `lease` from now.
---
--- Beyond the books: a holder whose work runs long renews before its lease runs out.
--- Once the lease has run out the permits are lost, even while no acquire has reclaimed
--- them yet: this call then reclaims them (they come back, and waiters try again) and
--- answers nil, as it does for a token that holds nothing.
--- @key state hash {<name>}:state     capacity, used (the permits held), seq (the queue's last ticket)
--- @key leases zset {<name>}:leases   token -> the holding's deadline (ms, server clock)
--- @key held hash {<name>}:held       token -> the permits it holds
--- @key bell list {<name>}:bell       rung when permits come back while anyone waits: the first in line blocks on it
--- @arg token string hex:32           the token the permits were acquired with
--- @arg lease ms 1..=10^15-1          the new lease, from now
--- @return uint?                      the new deadline (ms, server clock); nil when `token` holds nothing
--- @error BAD_ARGS                    not 4 keys and 2 arguments
--- @error BAD_TOKEN                   not 32 hex digits
--- @error BAD_LEASE                   not whole milliseconds within its range
--- @error BAD_KEYS                    a key not named as its template says
--- @error BAD_STATE   `state` holds a field these scripts never write, or less in use than is reclaimed
--- @error BAD_HELD                    `held` holds a count of permits that is not from 1 to 1000
--- @uses semaphore_state held_permits now_ms ring_bell shown
--- @clock server
--- @complexity O(log N), N = the holdings
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
if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local leases = KEYS[2]
local held = KEYS[3]
local bell = KEYS[4]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):state$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:state, got ' .. shown(state))
end
if leases ~= tag_of_keys .. ':leases' or held ~= tag_of_keys .. ':held' or bell ~= tag_of_keys .. ':bell' then
  for i, each in ipairs({ ':leases', ':held', ':bell' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in state, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
local rings = redis.call('LLEN', bell)
local st, err = semaphore_state(state)
if not st then
  return err
end
local permits, bad = held_permits(held, token)
if not permits then
  return bad
end
local deadline = tonumber(redis.call('ZSCORE', leases, token))
if permits == 0 then
  return false
end
local now = now_ms()
if deadline and deadline <= now then
  if permits > st.used then
    return redis.error_reply('BAD_STATE ' .. shown(state) .. ' has ' .. st.used
      .. ' permits in use, fewer than the ' .. permits .. ' of ' .. shown(token))
  end
  redis.call('ZREM', leases, token)
  redis.call('HDEL', held, token)
  redis.call('HSET', state, 'used', st.used - permits)
  ring_bell(bell, rings, 1, 60000)
  return false
end
redis.call('ZADD', leases, now + lease, token)
return now + lease
