--- Adds items at the head of a list, the last one newest (the book's `add`), and counts every item ever added.
---
--- 《Redis 应用实例》 chapter 23 (`Pagging.add`: LPUSH). Beyond the book, `added` counts
--- the items ever added, so that `page.lua` names an item by its arrival number (1 for
--- the first item ever added), which neither newer items nor trims at the tail (`LTRIM
--- key 0 n`) change. Add items with this script: an item pushed with a bare LPUSH is not
--- counted, and cursors issued before it may then show items again. A list filled
--- before it was counted has its items numbered from 1, oldest first, on its first add.
--- @key list list <key>             the items, newest first
--- @key added string {<key>}:added  how many items were ever added to `list`
--- @arg items bytes... 1..=1000   the items, oldest first
--- @return uint               the list's length after the add
--- @error BAD_ARGS            not 2 keys and from 1 to 1000 arguments
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_ADDED           `added` holds something other than an integer from 0 to 10^15 - 1, or would pass it
--- @uses safe_integer shown
--- @complexity O(M), M = the items
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
if #KEYS ~= 2 or #ARGV < 1 or #ARGV > 1000 then
  return redis.error_reply('BAD_ARGS expected 2 keys and from 1 to 1000 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local list = KEYS[1]
local added = KEYS[2]
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
count = math.max(tonumber(count or '0'), length)
-- The items are all of ARGV.
if count + #ARGV > 999999999999999 then
  return redis.error_reply('BAD_ADDED ' .. shown(added) .. ' would pass 10^15 - 1')
end
length = redis.call('LPUSH', list, unpack(ARGV))
redis.call('SET', added, string.format('%d', count + #ARGV))
return length
