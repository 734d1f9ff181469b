--- Runs `token`'s write hold and read holds, those it still has, for `lease` from now.
---
--- Beyond the book. A hold whose lease has passed is not brought back: the holder lost it
--- (take it again, and use the new fencing token).
--- @key writer hash {<name>}:writer       the write hold: `t` token, `n` count, `f` fence; expires with its lease
--- @key readers zset {<name>}:readers     read holder token -> lease deadline (ms, server clock)
--- @key read_holds hash {<name>}:read_holds  read holder token -> how many holds it took
--- @arg token string hex:32       the token the holds were taken with
--- @arg lease ms 1..=10^15-1      how long the holds last from now
--- @return (bool, bool)           whether the token's write hold was extended, and its read holds
--- @error BAD_ARGS                not 3 keys and 2 arguments
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_LEASE               not whole milliseconds within its range
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_WRITER              `writer` holds a field these scripts never write, or a value they did not write
--- @error BAD_READ_HOLDS          `read_holds` counts no whole number of holds for `token`
--- @uses now_ms expire_after_last write_hold read_count
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
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
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
-- The write hold in hash `writer_key` (`t` the holder's token, `n` how many times it took
-- the hold, `f` its fencing token; the key's expiry is the lease), read and checked before
-- any write: the token, count and fence, or nothing when the lock has no writer; or nil,
-- nil, nil and an error reply when the hash holds what these scripts never write.
local function write_hold(writer_key)
  local hold = redis.call('HMGET', writer_key, 't', 'n', 'f')
  local fields = redis.call('HLEN', writer_key)
  if fields == 0 then
    return nil
  end
  local t, n, f = hold[1], hold[2], hold[3]
  if fields ~= 3 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (n and safe_integer(n, 1, 9007199254740990))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, nil, redis.error_reply('BAD_WRITER ' .. shown(writer_key)
      .. ' holds no write hold (fields t, n and f)')
  end
  return t, tonumber(n), tonumber(f)
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
if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local writer = KEYS[1]
local readers = KEYS[2]
local read_holds = KEYS[3]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(writer, '^(.+):writer$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:writer, got ' .. shown(writer))
end
if readers ~= tag_of_keys .. ':readers' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:readers with <name> as in writer, got ' .. shown(readers))
end
if read_holds ~= tag_of_keys .. ':read_holds' then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<name>}:read_holds with <name> as in writer, got ' .. shown(read_holds))
end
-- End of the generated input checks.
local writer_token, _, _, bad_writer = write_hold(writer)
if bad_writer then
  return bad_writer
end
local count, bad_count = read_count(read_holds, token)
if not count then
  return bad_count
end
local now = now_ms()
local held = redis.call('ZSCORE', readers, token)
local wrote = writer_token == token
local read = held and tonumber(held) > now and count > 0
if wrote then
  redis.call('PEXPIRE', writer, lease)
end
if read then
  redis.call('ZADD', readers, now + lease, token)
  expire_after_last(readers, read_holds, now)
end
return {wrote and 1 or 0, read and 1 or 0}
