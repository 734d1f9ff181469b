--- Gives back the permits `token` holds, and its place in the queue if it waits.
---
--- Beyond the books. The permits come back at once (`used` goes down by them) and every
--- waiter blocked on `wake` tries again. A holding whose lease ran out is still released
--- here while no acquire has reclaimed it yet; after that the token holds nothing, and
--- releasing it frees nothing (0), however often it is sent. A waiter that gives up
--- calls this too: its place goes, and the requests behind it move up.
--- @key state hash {<name>}:state     capacity, used (the permits held), seq (the queue's last ticket)
--- @key leases zset {<name>}:leases   token -> the holding's deadline (ms, server clock)
--- @key held hash {<name>}:held       token -> the permits it holds
--- @key queue zset {<name>}:queue     waiting token -> its ticket, in arrival order
--- @key places zset {<name>}:places   waiting token -> its place's deadline (ms, server clock)
--- @key wake stream {<name>}:wake     gets an entry whenever permits or places free up
--- @arg token string hex:32           the token the permits were acquired with
--- @return uint                       the permits given back; 0 when `token` held none
--- @error BAD_ARGS                    not 6 keys and 1 argument
--- @error BAD_TOKEN                   not 32 hex digits
--- @error BAD_KEYS                    a key not named as its template says
--- @error BAD_STATE   `state` holds a field these scripts never write, or less in use than is released
--- @error BAD_HELD                    `held` holds a count of permits that is not from 1 to 1000
--- @uses semaphore_state held_permits first_live_waiter wake_waiters wake_one shown
--- @clock server
--- @complexity O(log N), N = the holdings and waiters
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
-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
end
-- Wakes the one waiter holding `waiter_token` (the first in line, when only it can go on):
-- the others read the entry and keep blocking without running their script. As
-- wake_waiters otherwise.
local function wake_one(wake_key, waiter_token)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', waiter_token)
  redis.call('PEXPIRE', wake_key, 60000)
end
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- The first token among the first ten waiting in zset `line_key` (`skip_token` aside, when
-- given) whose place in zset `places_key` (token -> deadline, server clock) is live: the
-- one waiter a release lets through, to wake alone. Then whether the line held anyone
-- among those read. Reads only.
local function first_live_waiter(line_key, places_key, skip_token)
  local heads = redis.call('ZRANGE', line_key, 0, skip_token and 10 or 9)
  if #heads == 0 then
    return nil, false
  end
  local now = now_ms()
  local deadlines = redis.call('ZMSCORE', places_key, unpack(heads))
  for i, head in ipairs(heads) do
    if head ~= skip_token and deadlines[i] and tonumber(deadlines[i]) > now then
      return head, true
    end
  end
  return nil, true
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
if #KEYS ~= 6 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 6 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local leases = KEYS[2]
local held = KEYS[3]
local queue = KEYS[4]
local places = KEYS[5]
local wake = KEYS[6]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):state$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:state, got ' .. shown(state))
end
for i, each in ipairs({ ':leases', ':held', ':queue', ':places', ':wake' }) do
  if KEYS[i + 1] ~= tag_of_keys .. each then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in state, got ' ..
        shown(KEYS[i + 1]))
  end
end
-- End of the generated input checks.
-- Reads first: a key of another type fails here, and foreign data is refused, before
-- anything is written.
redis.call('XLEN', wake)
local st, err = semaphore_state(state)
if not st then
  return err
end
local permits, bad = held_permits(held, token)
if not permits then
  return bad
end
if permits > st.used then
  return redis.error_reply('BAD_STATE ' .. shown(state) .. ' has ' .. st.used .. ' permits in use, fewer than the '
    .. permits .. ' of ' .. shown(token))
end
redis.call('ZSCORE', leases, token)
local queued = redis.call('ZSCORE', queue, token)
redis.call('ZSCORE', places, token)
-- While requests wait in line, only the first live one can be granted: it alone is
-- woken. Otherwise every waiter is.
local next_token = first_live_waiter(queue, places, token)

if permits > 0 then
  redis.call('HDEL', held, token)
  redis.call('HSET', state, 'used', st.used - permits)
end
redis.call('ZREM', leases, token)
if queued then
  redis.call('ZREM', queue, token)
end
redis.call('ZREM', places, token)
if permits > 0 or queued then
  if next_token then
    wake_one(wake, next_token)
  else
    wake_waiters(wake)
  end
end
return permits
