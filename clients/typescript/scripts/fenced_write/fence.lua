--- Raises the highest fencing token `resource` has seen to `token`, writing nothing else.
---
--- Beyond the books. A lock's new holder calls this right after it acquires, before it
--- reads the resource: from then on every write with an older token is refused, even
--- one from a holder that was paused past its lease and wakes before the new holder's
--- first write. A token below the highest seen is refused with STALE_TOKEN, as writes
--- are: the caller's lock was lost, and it should stop.
--- @key max_token string {<key>}:max_token   the highest token a write to the resource carried; kept, never expires
--- @arg token uint 1..=2^53-1                the holder's fencing token
--- @return uint                              the highest token seen before this call; 0 for none
--- @error BAD_ARGS                           not 1 key and 1 argument
--- @error BAD_TOKEN                          not an integer within its range
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
if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 1 key and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local max_token = KEYS[1]
local token = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not token or token > 9007199254740991 then
  return redis.error_reply('BAD_TOKEN must be an integer from 1 to 9007199254740991, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(max_token, '^(.+):max_token$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<key>}:max_token, got ' .. shown(max_token))
end
-- End of the generated input checks.
local highest, err = fence_check(max_token, token)
if not highest then
  return err
end
if token > highest then
  redis.call('SET', max_token, string.format('%d', token))
end
return highest
