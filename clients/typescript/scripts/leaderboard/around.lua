#!lua flags=no-writes
--- The items around one ("around me"): up to `n` ranked above it and `n` below, with their scores and ranks.
---
--- Beyond the book. The window is ZREVRANGE around the item's place, the item itself
--- included; each entry's rank follows `policy` (see standing.lua), so tied items at the
--- window's edges get the rank they have on the whole board, not in the window. One read,
--- so every rank is of one moment. A dense rank counts the scores in `levels`, which only
--- these scripts keep: a board written by another client lacks them, and a dense read of
--- a score `levels` does not hold is refused (NOT_ADOPTED) until adopt.lua has built them.
--- @key board zset <key>            item -> score (the book's key)
--- @key levels zset {<key>}:levels  each distinct score of `board` once (see set.lua)
--- @arg item bytes            the item
--- @arg n uint 1..=100        how many items above it, and how many below, at the most
--- @arg policy string standard|dense|modified|ordinal   how ties are ranked
--- @return [(bytes, float, uint)]  a row per item of the window, highest first, `item` itself included:
---                            the item, its score and its rank; empty when `item` is not on the board
--- @error BAD_ARGS            not 2 keys and 3 arguments
--- @error BAD_N               not an integer within its range
--- @error BAD_POLICY          not one of its choices
--- @error BAD_KEYS            a key not named as its template says
--- @error NOT_ADOPTED         `dense`, and a score of the window is not in `levels`: build them with adopt.lua
--- @error BAD_BOARD           a score of the window is an infinity, which another client wrote
--- @uses shown
--- @complexity O(n log N), N = the items
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
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local board = KEYS[1]
local levels = KEYS[2]
local item = ARGV[1]
local n = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not n or n > 100 then
  return redis.error_reply('BAD_N must be an integer from 1 to 100, got ' .. shown(ARGV[2]))
end
local policy = ARGV[3]
if policy ~= 'standard' and policy ~= 'dense' and policy ~= 'modified' and policy ~= 'ordinal' then
  return redis.error_reply('BAD_POLICY must be one of standard, dense, modified, ordinal, got ' .. shown(policy))
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
redis.call('ZCARD', levels)
local place = redis.call('ZREVRANK', board, item)
if not place then
  return {}
end
local first = math.max(place - n, 0)
local window = redis.call('ZREVRANGE', board, first, place + n, 'WITHSCORES')
local ranks = {}
local function rank_of(score, position)
  if policy == 'ordinal' then
    return position + 1
  end
  if not ranks[score] then
    if policy == 'standard' then
      ranks[score] = 1 + redis.call('ZCOUNT', board, '(' .. score, '+inf')
    elseif policy == 'dense' then
      if redis.call('ZCOUNT', levels, score, score) == 0 then
        return nil
      end
      ranks[score] = 1 + redis.call('ZCOUNT', levels, '(' .. score, '+inf')
    else
      ranks[score] = redis.call('ZCOUNT', board, score, '+inf')
    end
  end
  return ranks[score]
end
-- A score of the window is a finite number: the board's scripts write no other.
for i = 2, #window, 2 do
  local score = tonumber(window[i])
  if score == math.huge or score == -math.huge then
    return redis.error_reply('BAD_BOARD the board holds ' .. shown(window[i - 1]) .. ' at ' .. window[i]
      .. ' (another client wrote it), not a finite score')
  end
end
local rows = {}
for i = 1, #window, 2 do
  local rank = rank_of(window[i + 1], first + (i - 1) / 2)
  if not rank then
    return redis.error_reply('NOT_ADOPTED the board holds the score ' .. window[i + 1] .. ', which its levels lack'
      .. ' (another client wrote it): build them with leaderboard/adopt before reading dense ranks')
  end
  -- A rank is whole and below 2^53: an integer reply.
  rows[#rows + 1] = { window[i], window[i + 1], rank }
end
return rows
