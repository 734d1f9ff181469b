--- Sets the lock's lease to `ttl` from now if, and only if, it is held with `token`.
---
--- Beyond the book: a holder whose work runs longer than planned renews its lease, and a
--- client whose lease already ran out (and whose lock may now belong to someone else) is
--- told so instead of extending another holder's lock. A lock acquired without a lease
--- gets one.
--- @key lock string              the lock key
--- @arg token string non-empty   the secret the lock was acquired with
--- @arg ttl ms 1..=10^15-1       the new lease
--- @return bool                  1 when the lease was set; 0 for another token or a free lock
--- @error BAD_ARGS               not 1 key and 2 arguments
--- @error BAD_TOKEN              `token` is empty
--- @error BAD_TTL                `ttl` is not whole milliseconds from 1 to 10^15 - 1
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
local lock = KEYS[1]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
local ttl = integer(ARGV[2], '1', '999999999999999')
if not ttl then
  return redis.error_reply('BAD_TTL ttl must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
ttl = tonumber(ttl)
-- End of the generated input checks.
if redis.call('GET', lock) == token then
  return redis.call('PEXPIRE', lock, ttl)
end
return 0
