--- Records that `user` was seen at `now` (design b), and forgets up to 100 users not seen for `keep`.
---
--- 《Redis入门指南》 §5.3.4, design b: `last.seen` maps each user to the time it was last
--- seen, on the caller's clock (as design a names minutes by it). The book never trims
--- it; here each visit deletes up to 100 users not seen for `keep`, so the set holds
--- about the users of the last `keep`.
--- @key seen zset             user -> when it was last seen (ms): the book's `last.seen`
--- @arg user string non-empty    the user seen
--- @arg now uint 0..=10^15-1  the time, in milliseconds
--- @arg keep ms 1..=10^15-1   how long a user is remembered after it was last seen
--- @return nil                nothing
--- @error BAD_ARGS            not 1 key and 3 arguments
--- @error BAD_USER            `user` is empty
--- @error BAD_NOW             `now` is not an integer from 0 to 10^15 - 1
--- @error BAD_KEEP            `keep` is not whole milliseconds from 1 to 10^15 - 1
--- @clock caller
--- @complexity O(log N), N = the users remembered
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
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local seen = KEYS[1]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER user must not be empty')
end
local now = integer(ARGV[2], '0', '999999999999999')
if not now then
  return redis.error_reply('BAD_NOW now must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[2]))
end
now = tonumber(now)
local keep = integer(ARGV[3], '1', '999999999999999')
if not keep then
  return redis.error_reply('BAD_KEEP keep must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
keep = tonumber(keep)
-- End of the generated input checks.
redis.call('ZCARD', seen)
-- GT: a visit that arrives late (another app server's, a retry) never moves a user back.
redis.call('ZADD', seen, 'GT', now, user)
local stale = redis.call('ZRANGE', seen, '-inf', '(' .. string.format('%d', now - keep), 'BYSCORE', 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', seen, unpack(stale))
end
return nil
