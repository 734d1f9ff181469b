--- Removes an item from the board (the book's `remove`); its score leaves the distinct scores if no item holds it.
---
--- 《Redis 应用实例》 chapter 22 (`Ranking.remove`), a ZREM; `levels` follows as in set.lua.
--- @key board zset <key>            item -> score (the book's key)
--- @key levels zset {<key>}:levels  each distinct score of `board` once (member: the score as `%.17g`), for dense ranks
--- @arg item bytes            the item
--- @return bool               1 if it was on the board
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_KEYS            a key not named as its template says
--- @uses level
--- @complexity O(log N), N = the items
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; leaderboard/_shared.lua of the scripts folder).
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local board = KEYS[1]
local levels = KEYS[2]
local item = ARGV[1]
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
if not old then
  return 0
end
redis.call('ZREM', board, item)
if redis.call('ZCOUNT', board, old, old) == 0 then
  redis.call('ZREM', levels, level(tonumber(old)))
end
return 1
