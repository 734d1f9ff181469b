--- Gives back one of `token`'s read holds.
---
--- Beyond the book. The token's holds are counted in one field, and its lease is one
--- member of a sorted set, so a release costs O(log R) whatever the number of readers
--- (Redisson's checks every read hold). The last live read hold out wakes the waiters
--- (a writer waits for it). A hold whose lease has passed is no longer held: the call
--- drops what is left of it and answers nil.
--- @key readers zset {<name>}:readers     read holder token -> lease deadline (ms, server clock)
--- @key read_holds hash {<name>}:read_holds  read holder token -> how many holds it took
--- @key wake stream {<name>}:wake         the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the token the holds were taken with
--- @return uint?                  the token's read holds left (0: none, the token is out); nil when it held none
--- @error BAD_ARGS                not 3 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_READ_HOLDS          `read_holds` counts no whole number of holds for `token`
--- @uses wake_waiters now_ms read_count
--- @clock server
--- @complexity O(log R), R = the read holders
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and rw_lock/_shared.lua of the scripts folder).
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
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- How many read holds `token` has in hash `holds_key`, checked before any write: 0 when
-- none; nil and an error reply when the count is no whole number from 1.
local function read_count(holds_key, holder)
  local count = redis.call('HGET', holds_key, holder)
  if not count then
    return 0
  end
  if not safe_integer(count, 1, 9007199254740990) then
    return nil, redis.error_reply('BAD_READ_HOLDS ' .. shown(holds_key) .. ' counts '
      .. shown(count) .. ' holds for the token')
  end
  return tonumber(count)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local readers = KEYS[1]
local read_holds = KEYS[2]
local wake = KEYS[3]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(readers, '^(.+):readers$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:readers, got ' .. shown(readers))
end
if read_holds ~= tag_of_keys .. ':read_holds' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<name>}:read_holds with <name> as in readers, got ' .. shown(read_holds))
end
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply('BAD_KEYS KEYS[3] must be {<name>}:wake with <name> as in readers, got ' .. shown(wake))
end
-- End of the generated input checks.
local count, bad_count = read_count(read_holds, token)
if not count then
  return bad_count
end
redis.call('XLEN', wake)
local now = now_ms()
local held = redis.call('ZSCORE', readers, token)
if not (held and tonumber(held) > now and count > 0) then
  -- Lapsed, or never held: what is left of it goes.
  if held then
    redis.call('ZREM', readers, token)
  end
  if count > 0 then
    redis.call('HDEL', read_holds, token)
  end
  return false
end
if count > 1 then
  redis.call('HSET', read_holds, token, count - 1)
  return count - 1
end
redis.call('ZREM', readers, token)
redis.call('HDEL', read_holds, token)
if redis.call('ZCOUNT', readers, '(' .. now, '+inf') == 0 then
  wake_waiters(wake)
end
return 0
