--- Forgets a counter's old samples, one bounded chunk of its hash at a time, and the counter once it has none.
---
--- Redis in Action chapter 5 (`clean_counters`). The book's cleaner reads every sample of
--- a hash (`HKEYS`, unbounded), deletes the old ones, and then, in a WATCH transaction,
--- removes the counter from the index when its hash is empty. Here one call scans one
--- chunk of the hash (`HSCAN` from `cursor`, about `count` fields), deletes the samples
--- whose slot starts at or before `now` - `samples` x `precision` (the book's cutoff),
--- and, if the hash is then empty, takes `<precision>:<name>` out of the index, all in
--- one step: an update between two calls puts both back.
--- @key known zset {<namespace>}:known                    `<precision>:<name>` of every counter -> 0
--- @key hash hash {<namespace>}:count:<precision>:<name>  the counter's samples at `precision`: slot start (s) -> count
--- @arg name string non-empty the counter's name
--- @arg precision uint 1..=1000000000   the hash's precision (s)
--- @arg now uint 0..=10^15-1  the time to clean at (ms, the caller's clock)
--- @arg samples uint 1..=100000   how many slots back to keep (the book's 100)
--- @arg cursor string non-empty   where to go on scanning the hash ("0" to start)
--- @arg count uint 1..=1000   about how many fields to scan
--- @return (string, int, bool)   the next cursor ("0": done), samples deleted, whether the counter was forgotten
--- @error BAD_ARGS            not 2 keys and 6 arguments
--- @error BAD_NAME            empty
--- @error BAD_PRECISION       not an integer within its range
--- @error BAD_NOW             not an integer within its range
--- @error BAD_SAMPLES         not an integer within its range
--- @error BAD_CURSOR          empty, or not a decimal integer
--- @error BAD_COUNT           not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @uses safe_integer
--- @clock caller
--- @complexity O(C + log K), C = `count` (the whole hash while it is small enough for a listpack), K = the counters
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 6 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 6 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local known = KEYS[1]
local hash = KEYS[2]
local name = ARGV[1]
if name == '' then
  return redis.error_reply('BAD_NAME must not be empty')
end
local precision = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not precision or precision > 1000000000 then
  return redis.error_reply('BAD_PRECISION must be an integer from 1 to 1000000000, got ' .. shown(ARGV[2]))
end
local now = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not now or now > 999999999999999 then
  return redis.error_reply('BAD_NOW must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[3]))
end
local samples = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not samples or samples > 100000 then
  return redis.error_reply('BAD_SAMPLES must be an integer from 1 to 100000, got ' .. shown(ARGV[4]))
end
local cursor = ARGV[5]
if cursor == '' then
  return redis.error_reply('BAD_CURSOR must not be empty')
end
local count = tonumber(string.match(ARGV[6], '^[1-9]%d*$'))
if not count or count > 1000 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 1000, got ' .. shown(ARGV[6]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(known, '^(.+):known$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:known, got ' .. shown(known))
end
if hash ~= tag_of_keys .. ':count:' .. ARGV[2] .. ':' .. name then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:count:<precision>:<name> with <namespace> as in known and <precision> ' ..
      '= ARGV[2] and <name> = ARGV[1], got ' .. shown(hash))
end
-- End of the generated input checks.
if not string.match(cursor, '^%d+$') or #cursor > 20 then
  return redis.error_reply('BAD_CURSOR cursor must be a decimal integer, got '
    .. string.format('%q', string.sub(cursor, 1, 32)))
end
redis.call('ZCARD', known)
local cutoff = math.floor(now / 1000) - samples * precision
local scan = redis.call('HSCAN', hash, cursor, 'COUNT', count)
local old = {}
for i = 1, #scan[2], 2 do
  -- Only fields in the one form of integers are slots (update.lua writes no other).
  local slot = safe_integer(scan[2][i], 0, 999999999999) and tonumber(scan[2][i])
  if slot and slot <= cutoff then
    old[#old + 1] = scan[2][i]
  end
end
for i = 1, #old, 1000 do
  redis.call('HDEL', hash, unpack(old, i, math.min(i + 999, #old)))
end
local forgotten = 0
if redis.call('HLEN', hash) == 0 then
  forgotten = redis.call('ZREM', known, precision .. ':' .. name)
end
return { scan[1], #old, forgotten }
