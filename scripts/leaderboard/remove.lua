--- Removes an item from the board (the book's `remove`); its score leaves the distinct scores if no item holds it.
---
--- 《Redis 应用实例》 chapter 22 (`Ranking.remove`), a ZREM; `levels` follows as in set.lua.
--- @key board zset <key>            item -> score (the book's key)
--- @key levels zset {<key>}:levels  each distinct score of `board` once (member: the score as `%.17g`), for dense ranks
--- @arg item bytes            the item
--- @return bool               1 if it was on the board
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @uses level
--- @complexity O(log N), N = the items
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local board = KEYS[1]
local levels = KEYS[2]
local item = ARGV[1]
-- End of the generated input checks.
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- leaderboard/_shared.lua of the scripts folder).
-- A score as a member of `levels`: one spelling per value, whatever the server's own;
-- 0 and -0 are one level.
local function level(score)
  if score == 0 then
    return '0'
  end
  return string.format('%.17g', score)
end
-- End of the shared helpers.
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
