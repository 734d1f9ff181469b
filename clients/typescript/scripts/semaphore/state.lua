#!lua flags=no-writes
--- Reads the semaphore at one moment: capacity, permits in use, the sum of the holdings, waiters.
---
--- Beyond the books: what a monitor, or a test, checks. The invariant the other scripts
--- keep is that the permits in use are the sum of the holdings, and that once no lapsed
--- holding is left to reclaim, they are the sum of the live ones. Reads every holding:
--- at most 1,000, as each holds a permit at least and the capacity is at most 1,000.
--- @key state hash {<name>}:state     capacity, used (the permits held), seq (the queue's last ticket)
--- @key leases zset {<name>}:leases   token -> the holding's deadline (ms, server clock)
--- @key held hash {<name>}:held       token -> the permits it holds
--- @key places zset {<name>}:places   waiting token -> its place's deadline (ms, server clock)
--- @return (uint?, uint, uint, uint, uint, uint)  the capacity, nil when never set; the permits in use;
---   the sum of the holdings; the sum of those whose lease has not run out; the holdings; the live waiters
--- @error BAD_ARGS                    not 4 keys and 0 arguments
--- @error BAD_KEYS                    a key not named as its template says
--- @error BAD_STATE                   `state` holds a field these scripts never write
--- @error BAD_HELD    `held` holds a count of permits not from 1 to 1000, or more than 1,000 holdings
--- @uses semaphore_state now_ms safe_integer shown
--- @clock server
--- @complexity O(N), N = the holdings, at most 1,000
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local leases = KEYS[2]
local held = KEYS[3]
local places = KEYS[4]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):state$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:state, got ' .. shown(state))
end
if leases ~= tag_of_keys .. ':leases' or held ~= tag_of_keys .. ':held' or places ~= tag_of_keys .. ':places' then
  for i, each in ipairs({ ':leases', ':held', ':places' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in state, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
local st, err = semaphore_state(state)
if not st then
  return err
end
local holdings = redis.call('HLEN', held)
if holdings > 1000 or redis.call('ZCARD', leases) > 1000 then
  return redis.error_reply('BAD_HELD ' .. shown(held) .. ' has more than 1000 holdings')
end
local now = now_ms()
local live = {}
for _, token in ipairs(redis.call('ZRANGE', leases, '(' .. now, '+inf', 'BYSCORE')) do
  live[token] = true
end
local all = redis.call('HGETALL', held)
local sum, live_sum = 0, 0
for i = 1, #all, 2 do
  local permits = safe_integer(all[i + 1], 1, 1000)
  if not permits then
    return redis.error_reply('BAD_HELD ' .. shown(held) .. ' holds ' .. shown(all[i + 1]) .. ' permits for '
      .. shown(all[i]) .. ', not a whole number from 1 to 1000')
  end
  sum = sum + permits
  if live[all[i]] then
    live_sum = live_sum + permits
  end
end
local waiters = redis.call('ZCOUNT', places, '(' .. now, '+inf')
return { st.capacity or false, st.used, sum, live_sum, holdings, waiters }
