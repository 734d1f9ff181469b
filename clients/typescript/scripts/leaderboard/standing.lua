#!lua flags=no-writes
--- An item's score, its rank by every tie policy, and its percentile, on one or several boards at once.
---
--- Beyond the book (whose only ranks are ZREVRANGE positions). Ranks count from 1 for the
--- highest score. For the scores 100, 90, 90, 80: standard competition ranks are 1, 2, 2,
--- 4 ("1224": 1 + the items scored higher); dense ranks 1, 2, 2, 3 ("1223": 1 + the
--- distinct scores higher, counted in `levels`); modified competition ranks 1, 3, 3, 4
--- ("1334": the items scored as high or higher); ordinal ranks 1, 2, 3, 4 (ZREVRANK + 1:
--- ties in reverse byte order of the items). The percentile is 100 × (the items scored
--- lower + half the items scored the same, itself included) / the items. Several boards
--- (all in one hash slot) are read in one step, so their answers are of one moment. A
--- dense rank counts the scores in `levels`, which only these scripts keep: a board
--- written by another client lacks them, and is refused (NOT_ADOPTED) where it holds the
--- item at a score its levels lack, until adopt.lua has built them.
--- @key boards... zset 2..=20 <key>|{<key>}:levels  each board then its levels (see set.lua): the two forms in turn
--- @arg item bytes            the item
--- @return [(float?, uint?, uint?, uint?, uint?, float?, uint)]  a row per board, in order: the item's
---                            score, its standard, dense, modified and ordinal ranks, its percentile, and
---                            the board's items; all but the items nil when the item is not on that board
--- @error BAD_ARGS            not from 2 to 20 keys and 1 argument; or keys not in board, levels pairs
--- @error BAD_KEYS            a key not named as its template says
--- @error NOT_ADOPTED         a board holds the item at a score its levels lack: build them with adopt.lua
--- @complexity O(B log N), B = the boards, N = the items of the largest
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 2 or #KEYS > 20 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected from 2 to 20 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local item = ARGV[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_item
for i = 1, #KEYS do
  if (i - 1) % 2 == 0 then
    tag_of_item = key_group(KEYS[i])
    if KEYS[i] == '' or not tag_of_item then
      return redis.error_reply('BAD_KEYS KEYS[' .. i .. '] must be <key>, got ' .. shown(KEYS[i]))
    end
  else
    if KEYS[i] ~= tag_of_item .. ':levels' then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i .. '] must be {<key>}:levels with <key> as in boards, got ' .. shown(KEYS[i]))
    end
  end
end
-- End of the generated input checks.
if #KEYS % 2 ~= 0 then
  return redis.error_reply('BAD_ARGS keys must be board, levels pairs; got ' .. #KEYS .. ' keys')
end
local rows = {}
for b = 1, #KEYS, 2 do
  local board, levels = KEYS[b], KEYS[b + 1]
  redis.call('ZCARD', levels)
  local items = redis.call('ZCARD', board)
  local score = redis.call('ZSCORE', board, item)
  if not score then
    -- false is nil in the reply: the item has no standing on this board.
    rows[#rows + 1] = { false, false, false, false, false, false, items }
  elseif redis.call('ZCOUNT', levels, score, score) == 0 then
    return redis.error_reply('NOT_ADOPTED board ' .. (b + 1) / 2 .. ' holds the item at ' .. score
      .. ', a score its levels lack (another client wrote it): build them with leaderboard/adopt')
  else
    local higher = redis.call('ZCOUNT', board, '(' .. score, '+inf')
    local same = redis.call('ZCOUNT', board, score, score)
    local lower = items - higher - same
    -- Counts are whole and below 2^53: integer replies. Floats go as text.
    rows[#rows + 1] = {
      score,
      1 + higher,
      1 + redis.call('ZCOUNT', levels, '(' .. score, '+inf'),
      higher + same,
      1 + redis.call('ZREVRANK', board, item),
      string.format('%.17g', 100 * (lower + same / 2) / items),
      items,
    }
  end
end
return rows
