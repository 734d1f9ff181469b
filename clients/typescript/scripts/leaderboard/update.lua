--- Adds to an item's score (the book's `update_weight`), and keeps the board's distinct scores for dense ranks.
---
--- 《Redis 应用实例》 chapter 22 (`Ranking.update_weight`), a ZINCRBY; an item not on the
--- board starts from 0. `levels` follows as in set.lua. A change that would take the
--- score past the finite numbers is refused (ZINCRBY would store inf), and so is a score
--- another client stored as an infinity.
--- @key board zset <key>            item -> score (the book's key)
--- @key levels zset {<key>}:levels  each distinct score of `board` once (member: the score as `%.17g`), for dense ranks
--- @arg item bytes            the item
--- @arg change float          what to add (negative to take away)
--- @return float              the item's new score
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_CHANGE          not a finite decimal number
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_BOARD           the item's score on `board` is an infinity (another client wrote it); nothing was written
--- @error OVERFLOW            the new score would not be a finite number; nothing was written
--- @uses level
--- @complexity O(log N), N = the items
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; leaderboard/_shared.lua of the scripts folder).
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
-- A score as a member of `levels`: one spelling per value, whatever the server's own;
-- 0 and -0 are one level.
local function level(score)
  if score == 0 then
    return '0'
  end
  return string.format('%.17g', score)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local board = KEYS[1]
local levels = KEYS[2]
local item = ARGV[1]
local change = float(ARGV[2])
if not change then
  return redis.error_reply(
      'BAD_CHANGE must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_group(board)
if board == '' or not tag_of_keys then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(board))
end
if levels ~= tag_of_keys .. ':levels' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<key>}:levels with <key> as in board, got ' .. shown(levels))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', board)
redis.call('ZCARD', levels)

local old = redis.call('ZSCORE', board, item)
if change == 0 then
  -- Adding -0 to -0 would keep a -0; adding 0 changes nothing either way.
  change = 0
end
-- Checked before the first write: the sum ZINCRBY makes, in the same doubles.
local held = tonumber(old or '0')
if held == math.huge or held == -math.huge then
  return redis.error_reply('BAD_BOARD the item\'s score is ' .. old .. ', not a finite number')
end
if held + change == math.huge or held + change == -math.huge then
  return redis.error_reply('OVERFLOW the item\'s score ' .. (old or '0') .. ' plus ' .. level(change)
    .. ' is not a finite number')
end
local new = redis.call('ZINCRBY', board, level(change), item)
if tonumber(new) == 0 and new ~= '0' then
  new = '0'
  redis.call('ZADD', board, 0, item)
end
if old and tonumber(old) ~= tonumber(new) and redis.call('ZCOUNT', board, old, old) == 0 then
  redis.call('ZREM', levels, level(tonumber(old)))
end
redis.call('ZADD', levels, new, level(tonumber(new)))
return new
