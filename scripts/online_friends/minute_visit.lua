--- Marks `user` online in the set of the current minute (design a: one set per minute).
---
--- 《Redis入门指南》 §5.3.4, design a: each minute of the hour has a set of the users
--- seen in it, named by the minute (`active.users:<MM>`, 00 to 59), so the name of a
--- minute comes back every hour. The set expires `expiry` after its last visit; keep `expiry`
--- well under an hour (at most 50 minutes here), so that a set is gone before its name is
--- used again. The book adds and sets the expiry in two commands; a crash between them
--- would leave a set with no expiry, whose users would come back online an hour later.
--- Here both are one step.
--- @key minute set            the set of the current minute, `active.users:<MM>`
--- @arg user string non-empty    the user seen
--- @arg expiry ms 1..=3000000    how long the set lives after its last visit (at most 50 minutes)
--- @return bool               1 if the user was not yet in this minute's set
--- @error BAD_ARGS            not 1 key and 2 arguments
--- @error BAD_USER            `user` is empty
--- @error BAD_EXPIRY          `expiry` is not whole milliseconds from 1 to 3000000
--- @complexity O(1)
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local minute = KEYS[1]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER user must not be empty')
end
local expiry = integer(ARGV[2], '1', '3000000')
if not expiry then
  return redis.error_reply('BAD_EXPIRY expiry must be whole milliseconds from 1 to 3000000, got ' .. shown(ARGV[2]))
end
expiry = tonumber(expiry)
-- End of the generated input checks.
local added = redis.call('SADD', minute, user)
redis.call('PEXPIRE', minute, expiry)
return added
