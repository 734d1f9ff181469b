--- Logs a message to a recent log: pushes it with the server's time and keeps the last `keep`, in one step.
---
--- Redis in Action chapter 5 (`log_recent`): `LPUSH recent:<name>:<severity>` then
--- `LTRIM … 0 99`, in a MULTI of their own. The book prefixes the message with the web
--- server's `time.asctime()`; here the entry is `<ms> <message>`, the server's clock in
--- Unix ms (Lua in Redis has no date formatting, and one clock orders every server's
--- entries).
--- Reply: when the message was logged (ms, server clock).
--- @key recent list           the newest entries first, each `<ms> <message>`
--- @arg message string        the message
--- @arg keep uint 1..=10000   how many entries to keep (the book's 100)
--- @return int                when it was logged (ms, server clock)
--- @error BAD_ARGS            not 1 key and 2 arguments
--- @error BAD_KEEP            `keep` is not an integer from 1 to 10000
--- @clock server
--- @complexity O(1): the trim drops one entry at most
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
local recent = KEYS[1]
local message = ARGV[1]
local keep = integer(ARGV[2], '1', '10000')
if not keep then
  return redis.error_reply('BAD_KEEP keep must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
keep = tonumber(keep)
-- End of the generated input checks.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('LPUSH', recent, string.format('%d', now) .. ' ' .. message)
redis.call('LTRIM', recent, 0, keep - 1)
return now
