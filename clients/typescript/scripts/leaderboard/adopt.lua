--- Builds a board's levels in bounded steps, so that a sorted set another client wrote becomes a leaderboard.
---
--- Beyond the book. `levels` holds each distinct score of `board` once (see set.lua), and
--- only these scripts keep it: a sorted set another client wrote (ZADD) has none, so its
--- dense ranks would all be 1, and around.lua and standing.lua refuse them (NOT_ADOPTED).
--- One call walks the board from the highest score down, from `cursor`, over at most
--- `count` items, and adds each distinct score it reads to `levels` (one item per score
--- is enough: a step goes on below the lowest score it read). Call it again with the
--- cursor it answers until that is nil. It only adds scores the board holds at that
--- moment, so writes through set.lua, update.lua and remove.lua may run between the
--- calls: each keeps the levels of the scores it touches, and no step undoes that. While
--- the walk is under way, dense ranks at and above the cursor are already right, and a
--- dense read of a score below it that `levels` lacks is refused. Scores written by
--- other clients after the walk passed them are not seen: adopt the board again. A level
--- that no score holds any more (another client removed its items) stays: delete
--- `levels` and adopt the board again to build it anew.
--- @key board zset <key>            item -> score (the book's key)
--- @key levels zset {<key>}:levels  each distinct score of `board` once (member: the score as `%.17g`), for dense ranks
--- @arg cursor string         where the walk goes on, as the last call answered it; empty to begin
--- @arg count uint 1..=1000   the most items one step reads
--- @return (string?, uint)    the cursor to go on from (nil: every score has its level), and how many
---                            levels this step added
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_COUNT           not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_CURSOR          not a cursor this script answers: a decimal number, `inf` or `-inf`
--- @uses level float shown
--- @complexity O(log N + C log L), N = the items, C = `count`, L = the levels
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
local cursor = ARGV[1]
local count = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not count or count > 1000 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 1000, got ' .. shown(ARGV[2]))
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
-- A cursor is the lowest score walked so far: the walk goes on strictly below it.
if cursor ~= '' and cursor ~= 'inf' and cursor ~= '-inf' and not float(cursor) then
  return redis.error_reply('BAD_CURSOR cursor must be a score this script answered, got ' .. shown(cursor))
end
local top = cursor == '' and '+inf' or '(' .. cursor
local scored = redis.call('ZRANGE', board, top, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, count, 'WITHSCORES')
local added = 0
local pairs_of = {}
local last
for i = 2, #scored, 2 do
  local score = tonumber(scored[i])
  if score ~= last then
    last = score
    local member = level(score)
    pairs_of[#pairs_of + 1] = member
    pairs_of[#pairs_of + 1] = member
  end
end
-- ZADD in chunks: Lua's unpack takes a few thousand values at the most.
for i = 1, #pairs_of, 1000 do
  added = added + redis.call('ZADD', levels, unpack(pairs_of, i, math.min(i + 999, #pairs_of)))
end
if not last or redis.call('ZCOUNT', board, '-inf', '(' .. level(last)) == 0 then
  return { false, added }
end
-- The cursor: the score as its level spells it, which the rule for floats reads, or `inf`,
-- `-inf`.
return { level(last), added }
