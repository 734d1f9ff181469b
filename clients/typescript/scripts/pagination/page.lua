#!lua flags=no-writes
--- Reads one page of a list, newest first, by a cursor that neither new items nor trims at the tail shift.
---
--- 《Redis 应用实例》 chapter 23 pages by offset (`LRANGE (page-1)*size page*size-1`), so an
--- item added at the head between two reads moves every later item down one place: the
--- reader sees an item twice, or, with deletions, misses one. Here every item has an
--- arrival number (1 for the first item ever added; `added`, kept by `add.lua`, counts
--- them), and the cursor is the number of the newest item still to read. The first page
--- (an empty cursor) reads the newest `size` items; each reply gives the cursor of the
--- next page, 0 after the oldest item. A reader never sees an item twice: items added
--- since do not move the cursor, and a trim at the tail (`LTRIM key 0 n`) only takes the
--- oldest items away, so a cursor whose items were all trimmed answers an empty last
--- page. A cursor past the newest item (the keys were deleted and begun again) answers
--- the same. Other removals (LREM, a trim at the head) make a cursor skip as many items,
--- never repeat one. A list with no `added` (filled by LPUSH alone) is read as if its
--- oldest item were number 1.
--- @key list list <key>             the items, newest first (added with `add.lua`)
--- @key added string {<key>}:added  how many items were ever added to `list` (see `add.lua`)
--- @arg cursor uint? 1..=10^15-1   the newest item still to read (its number), from the last reply; empty at first
--- @arg size uint 1..=1000    the most items on the page
--- @return (uint, [bytes])    the next page's cursor (0 when there is none), and the page's items,
---                            newest first: the shape of SCAN's reply
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_CURSOR          not an integer within its range (or empty)
--- @error BAD_SIZE            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_ADDED           `added` holds something other than an integer from 0 to 10^15 - 1
--- @uses safe_integer shown
--- @complexity O(S + M), S = how far the page is from the nearer end of the list, M = `size`
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local list = KEYS[1]
local added = KEYS[2]
local cursor = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if ARGV[1] ~= '' and (not cursor or cursor > 999999999999999) then
  return redis.error_reply('BAD_CURSOR must be an integer from 1 to 999999999999999, or empty, got ' .. shown(ARGV[1]))
end
local size = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not size or size > 1000 then
  return redis.error_reply('BAD_SIZE must be an integer from 1 to 1000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_group(list)
if list == '' or not tag_of_keys then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(list))
end
if added ~= tag_of_keys .. ':added' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<key>}:added with <key> as in list, got ' .. shown(added))
end
-- End of the generated input checks.
local length = redis.call('LLEN', list)
local count = redis.call('GET', added)
if count and not safe_integer(count, 0, 999999999999999) then
  return redis.error_reply('BAD_ADDED ' .. shown(added) .. ' holds ' .. shown(count)
    .. ', not a count from 0 to 10^15 - 1')
end
-- The list holds the items numbered oldest to newest, the newest `length` of all added.
local newest = math.max(tonumber(count or '0'), length)
local oldest = newest - length + 1
local top = cursor or newest
if top > newest or top < oldest then
  return { 0, {} }
end
local bottom = math.max(oldest, top - size + 1)
-- The item numbered n is at index -(n - oldest + 1), counted from the tail.
local page = redis.call('LRANGE', list, -(top - oldest + 1), -(bottom - oldest + 1))
-- The cursor is below 10^15: an integer reply.
return { bottom > oldest and bottom - 1 or 0, page }
