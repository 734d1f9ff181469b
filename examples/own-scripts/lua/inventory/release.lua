--- Gives every unit reserved for `order` back to stock, and returns how many there were.
---
--- For an order that was cancelled or never paid. Releasing twice gives nothing back the
--- second time, so a retried release cannot inflate the stock.
--- @key stock string {<sku>}:stock      units in stock: an integer; missing counts as 0
--- @key reserved hash {<sku>}:reserved  units reserved, by order; in the same hash slot as `stock`
--- @arg order string non-empty       the order whose units go back
--- @return uint                      the units given back; 0 when the order had none reserved
--- @error BAD_ARGS                   not 2 keys and 1 argument
--- @error BAD_ORDER                  empty
--- @error BAD_KEYS                   a key not named as its template says
--- @error NOT_A_COUNT                the order's reservation is not a count of units
--- @uses integer shown
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local stock = KEYS[1]
local reserved = KEYS[2]
local order = ARGV[1]
if order == '' then
  return redis.error_reply('BAD_ORDER must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(stock, '^(.+):stock$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<sku>}:stock, got ' .. shown(stock))
end
if reserved ~= tag_of_keys .. ':reserved' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<sku>}:reserved with <sku> as in stock, got ' .. shown(reserved))
end
-- End of the generated input checks.
local units = redis.call('HGET', reserved, order)
if not units then
  return 0
end
if not integer(units, '1', '9223372036854775807') then
  return redis.error_reply('NOT_A_COUNT ' .. reserved .. ' holds ' .. shown(units) .. ' for ' .. shown(order))
end
-- INCRBY first: if `stock` is not an integer it fails before anything is written.
redis.call('INCRBY', stock, units)
redis.call('HDEL', reserved, order)
return tonumber(units)
