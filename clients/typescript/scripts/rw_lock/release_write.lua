--- Gives back one of `token`'s write holds; the last one frees the lock.
---
--- Beyond the book. Freeing the lock wakes the waiters. A hold whose lease has passed is
--- gone (its key expired): the call answers nil.
--- @key writer hash {<name>}:writer       the write hold: `t` token, `n` count, `f` fence; expires with its lease
--- @key wake stream {<name>}:wake         the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the token the hold was taken with
--- @return uint?                  the token's write holds left (0: the lock is free); nil when it held none
--- @error BAD_ARGS                not 2 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_WRITER              `writer` holds a field these scripts never write, or a value they did not write
--- @uses wake_waiters write_hold
--- @complexity O(1)
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local writer = KEYS[1]
local wake = KEYS[2]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(writer, '^(.+):writer$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:writer, got ' .. shown(writer))
end
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:wake with <name> as in writer, got ' .. shown(wake))
end
-- End of the generated input checks.
local writer_token, count, _, bad_writer = write_hold(writer)
if bad_writer then
  return bad_writer
end
redis.call('XLEN', wake)
if writer_token ~= token then
  return false
end
if count > 1 then
  redis.call('HSET', writer, 'n', count - 1)
  return count - 1
end
redis.call('DEL', writer)
wake_waiters(wake)
return 0
