--- Adds items at the head of a list, the last one newest (the book's `add`), and counts every item ever added.
---
--- 《Redis 应用实例》 chapter 23 (`Pagging.add`: LPUSH). Beyond the book, `added` counts
--- the items ever added, so that `page.lua` names an item by its arrival number (1 for
--- the first item ever added), which neither newer items nor trims at the tail (`LTRIM
--- key 0 n`) change. Add items with this script: an item pushed with a bare LPUSH is not
--- counted, and cursors issued before it may then show items again. A list filled
--- before it was counted has its items numbered from 1, oldest first, on its first add.
--- @key list list             the items, newest first
--- @key added string          how many items were ever added to `list` (the Rust `Paging` names it `{<list>}:added`)
--- @arg items bytes... 1..=1000   the items, oldest first
--- @return uint               the list's length after the add
--- @error BAD_ARGS            not 2 keys and from 1 to 1000 arguments
--- @error BAD_ADDED           `added` holds something other than an integer from 0 to 10^15 - 1, or would pass it
--- @complexity O(M), M = the items
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
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
if #KEYS ~= 2 or #ARGV < 1 or #ARGV > 1000 then
  return redis.error_reply('BAD_ARGS expected 2 keys and from 1 to 1000 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local list = KEYS[1]
local added = KEYS[2]
-- End of the generated input checks.
local length = redis.call('LLEN', list)
local count = redis.call('GET', added)
if count and not integer(count, '0', '999999999999999') then
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
