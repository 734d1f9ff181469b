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
--- @error BAD_USER            empty
--- @error BAD_EXPIRY          not whole milliseconds within its range
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local minute = KEYS[1]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER user must not be empty')
end
local expiry = safe_integer(ARGV[2], 1, 3000000)
if not expiry then
  return redis.error_reply('BAD_EXPIRY expiry must be whole milliseconds from 1 to 3000000, got ' .. shown(ARGV[2]))
end
-- End of the generated input checks.
local added = redis.call('SADD', minute, user)
redis.call('PEXPIRE', minute, expiry)
return added
