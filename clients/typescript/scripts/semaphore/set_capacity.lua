--- Sets the semaphore's capacity: how many permits may be held at once.
---
--- Beyond the books: an operator's call, at any time. Raising it lets waiters in at once
--- (the bell rings once for each permit added, for as many as wait). Lowering
--- it below the permits in use drains: holders keep what they hold, and nothing more is
--- granted until in use + the permits asked for fits again.
--- A request for more than the new capacity is refused when it next asks (BAD_N), so it
--- never blocks the queue for good. Until the first call, every acquire answers
--- NO_CAPACITY: no client's default can disagree with another's.
--- @key state hash {<name>}:state     capacity, used (the permits held), seq (the queue's last ticket)
--- @key places zset {<name>}:places   waiting token -> its place's deadline (ms, server clock)
--- @key bell list {<name>}:bell       rung when permits come back while anyone waits: the first in line blocks on it
--- @arg capacity uint 0..=1000        the new capacity
--- @return uint?                      the capacity before; nil when it had none
--- @error BAD_ARGS                    not 3 keys and 1 argument
--- @error BAD_CAPACITY                not an integer within its range
--- @error BAD_KEYS                    a key not named as its template says
--- @error BAD_STATE                   `state` holds a field these scripts never write
--- @uses semaphore_state ring_bell
--- @complexity O(1)
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local places = KEYS[2]
local bell = KEYS[3]
local capacity = ARGV[1] == '0' and 0 or tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not capacity or capacity > 1000 then
  return redis.error_reply('BAD_CAPACITY must be an integer from 0 to 1000, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):state$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:state, got ' .. shown(state))
end
if places ~= tag_of_keys .. ':places' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:places with <name> as in state, got ' .. shown(places))
end
if bell ~= tag_of_keys .. ':bell' then
  return redis.error_reply('BAD_KEYS KEYS[3] must be {<name>}:bell with <name> as in state, got ' .. shown(bell))
end
-- End of the generated input checks.
local rings = redis.call('LLEN', bell)
local waiting = redis.call('ZCARD', places)
local st, err = semaphore_state(state)
if not st then
  return err
end
redis.call('HSET', state, 'capacity', capacity)
ring_bell(bell, rings, math.min(capacity - (st.capacity or 0), waiting), 60000)
return st.capacity or false
