--- Sets the string at `resource` to `value`, if `token` is at least the highest fencing token it has seen.
---
--- Beyond the books: fencing (Kleppmann's "How to do distributed locking") for a
--- resource that lives in Redis. A holder of `fenced_lock` (or of any lock that hands
--- out increasing tokens) sends its token with each write; `max_token` keeps the highest
--- token a write carried, and a write with a lower one is refused with STALE_TOKEN and
--- changes nothing. So a holder that was paused past its lease, while a later holder
--- wrote, can no longer write. Equal tokens pass: one holder writes as often as it likes.
--- A later holder that must shut out older ones before its first write calls
--- `fence.lua`. The refusal is an error reply, so a client that ignores what a write
--- answers still stops: redis-py raises, ioredis rejects, Jedis throws. Its message is
--- `highest <h>, token <t>: …`.
--- @key resource string <key>                the fenced value; a key of another type is refused (WRONGTYPE)
--- @key max_token string {<key>}:max_token   the highest token a write to `resource` carried; kept, never expires
--- @arg token uint 1..=2^53-1                the writer's fencing token
--- @arg ttl ms? 1..=10^15-1                  the value's time to live; empty for none
--- @arg value bytes                          the new value
--- @return uint                              the highest token seen before this write; 0 for none
--- @error BAD_ARGS                           not 2 keys and 3 arguments
--- @error BAD_TOKEN                          not an integer within its range
--- @error BAD_TTL                            not whole milliseconds within its range (or empty)
--- @error BAD_KEYS                           a key not named as its template says
--- @error BAD_MAX_TOKEN                      `max_token` holds something other than a token from 1 to 2^53 - 1
--- @error STALE_TOKEN                        `token` is below the highest seen; nothing was written
--- @uses fence_check
--- @complexity O(1)
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
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local resource = KEYS[1]
local max_token = KEYS[2]
local token = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not token or token > 9007199254740991 then
  return redis.error_reply('BAD_TOKEN must be an integer from 1 to 9007199254740991, got ' .. shown(ARGV[1]))
end
local ttl = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[2]))
end
local value = ARGV[3]
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
local highest, err = fence_check(max_token, token)
if not highest then
  return err
end
-- GET raises WRONGTYPE for a key of another type, before the first write.
redis.call('GET', resource)
if ttl then
  redis.call('SET', resource, value, 'PX', ttl)
else
  redis.call('SET', resource, value)
end
if token > highest then
  redis.call('SET', max_token, string.format('%d', token))
end
return highest
