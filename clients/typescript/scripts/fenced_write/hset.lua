--- Sets fields of the hash at `resource`, if `token` is at least the highest fencing token it has seen.
---
--- Beyond the books: `set.lua`'s fencing for a hash. The fields given are set (HSET);
--- the others stay. A write with a token below the one `max_token` keeps is refused with
--- STALE_TOKEN and changes nothing; equal tokens pass.
--- @key resource hash <key>                  the fenced hash; a key of another type is refused (WRONGTYPE)
--- @key max_token string {<key>}:max_token   the highest token a write to `resource` carried; kept, never expires
--- @arg token uint 1..=2^53-1                the writer's fencing token
--- @arg fields bytes... 2..=2000             field, value, field, value, ...: from 1 to 1000 pairs
--- @return uint                              the highest token seen before this write; 0 for none
--- @error BAD_ARGS                           not 2 keys and from 3 to 2001 arguments
--- @error BAD_TOKEN                          not an integer within its range
--- @error BAD_KEYS                           a key not named as its template says
--- @error BAD_FIELDS                         a field without a value: the fields and values are an odd number
--- @error BAD_MAX_TOKEN                      `max_token` holds something other than a token from 1 to 2^53 - 1
--- @error STALE_TOKEN                        `token` is below the highest seen; nothing was written
--- @uses fence_check
--- @complexity O(N), N = the fields given
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; fenced_write/_shared.lua of the scripts folder).
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
-- The hash tag group that a template's `{…}` makes of value `s`: `s` itself when it holds a
-- hash tag (a `{`, then the first `}` after it, with at least one byte between), else `s` in
-- braces; nil for an empty value, or one with a `}` but no hash tag.
local function key_group(s)
  if string.find(s, '^[^{]*{[^}]+}') then
    return s
  end
  if s ~= '' and not string.find(s, '}', 1, true) then
    return '{' .. s .. '}'
  end
end
-- The highest fencing token `max_key` has seen, 0 when none; nil and an error reply when
-- it holds something other than a token, or a STALE_TOKEN error reply when
-- `fencing_token` is below it. Reads only.
local function fence_check(max_key, fencing_token)
  local stored = redis.call('GET', max_key)
  local highest = 0
  if stored then
    highest = safe_integer(stored, 1, 9007199254740991)
    if not highest then
      return nil, redis.error_reply('BAD_MAX_TOKEN ' .. shown(max_key) .. ' holds ' .. shown(stored)
        .. ', not a fencing token from 1 to 2^53 - 1')
    end
  end
  if fencing_token < highest then
    return nil, redis.error_reply('STALE_TOKEN highest ' .. string.format('%d', highest) .. ', token '
      .. string.format('%d', fencing_token) .. ': a write with a token below the highest seen is refused')
  end
  return highest
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV < 3 or #ARGV > 2001 then
  return redis.error_reply('BAD_ARGS expected 2 keys and from 3 to 2001 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local resource = KEYS[1]
local max_token = KEYS[2]
local token = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not token or token > 9007199254740991 then
  return redis.error_reply('BAD_TOKEN must be an integer from 1 to 9007199254740991, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_group(resource)
if resource == '' or not tag_of_keys then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(resource))
end
if max_token ~= tag_of_keys .. ':max_token' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<key>}:max_token with <key> as in resource, got ' .. shown(max_token))
end
-- End of the generated input checks.
if #ARGV % 2 ~= 1 then
  return redis.error_reply('BAD_FIELDS fields must be field, value pairs; got ' .. (#ARGV - 1) .. ' arguments')
end
local highest, err = fence_check(max_token, token)
if not highest then
  return err
end
-- HLEN raises WRONGTYPE for a key of another type, before the first write.
redis.call('HLEN', resource)
-- In batches: unpack() of a long list would overflow Lua's stack.
for i = 2, #ARGV, 500 do
  redis.call('HSET', resource, unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
if token > highest then
  redis.call('SET', max_token, string.format('%d', token))
end
return highest
