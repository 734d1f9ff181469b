--- Records a context's average in the ranking of the slowest, keeping the `keep` slowest.
---
--- Redis in Action chapter 5 (`access_time`'s `ZADD slowest:AccessTime avg context` and
--- `ZREMRANGEBYRANK slowest:AccessTime 0 -101`, a MULTI of its own after update_stats).
--- Here one step; a ranking over `keep` (after `keep` was lowered) loses at most 1000
--- of its fastest per call.
--- @key slowest zset <key>    context -> its average access time
--- @arg context string non-empty   the context (a page, an endpoint)
--- @arg average float         its average access time
--- @arg keep uint 1..=10000   how many of the slowest to keep (the book's 100)
--- @return int                how many contexts the ranking holds
--- @error BAD_ARGS            not 1 key and 3 arguments
--- @error BAD_CONTEXT         empty
--- @error BAD_AVERAGE         not a finite decimal number
--- @error BAD_KEEP            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(log N + M), N = the ranking's size, M = contexts dropped (at most 1000)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
-- The one rule for floats: decimal digits with an optional leading '-', then an optional
-- fraction and an optional exponent (`e` or `E`, an optional sign, digits), as Python,
-- JavaScript, Java, Go and C print floats (1e+16, 1e-07, 1.0E16); no leading zero, '+'
-- before the number, space, hex, inf or nan.
local function float(s)
  local whole, fraction, exponent = string.match(s, '^%-?(%d+)(%.?%d*)(.*)$')
  if not whole or (#whole > 1 and string.sub(whole, 1, 1) == '0') or fraction == '.' then
    return nil
  end
  if exponent ~= '' and not string.match(exponent, '^[eE][%+%-]?%d+$') then
    return nil
  end
  local n = tonumber(s)
  if n ~= n or n == math.huge or n == -math.huge then
    return nil
  end
  return n
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
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local slowest = KEYS[1]
local context = ARGV[1]
if context == '' then
  return redis.error_reply('BAD_CONTEXT must not be empty')
end
local average = float(ARGV[2])
if not average then
  return redis.error_reply(
      'BAD_AVERAGE must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' .. shown(ARGV[2]))
end
local keep = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 10000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if slowest == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(slowest))
end
-- End of the generated input checks.
redis.call('ZADD', slowest, average, context)
local size = redis.call('ZCARD', slowest)
local dropped = math.min(math.max(size - keep, 0), 1000)
if dropped > 0 then
  redis.call('ZREMRANGEBYRANK', slowest, 0, dropped - 1)
end
return size - dropped
