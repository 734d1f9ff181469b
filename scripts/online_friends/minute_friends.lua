#!lua flags=no-writes
--- The friends of a user seen in any of the given minutes (design a).
---
--- 《Redis入门指南》 §5.3.4, design a. The book takes the union of the last N minutes'
--- sets into a temporary key and intersects it with the friends set; here each friend is
--- looked up in each minute's set (SINTER of the two), with no temporary key, so
--- concurrent callers never share one. The work is one lookup per friend per minute, and
--- each friend found costs a reply per minute it was seen in, so the window is at most
--- 10 minutes and the friends set holds at most 300 users.
--- @key friends set {<ns>}:friends:<user>  the user's friends
--- @key minutes... set 1..=10 {<ns>}:active.users:<minute>  the sets of the last N minutes, newest first
--- @return [string]           the friends seen in any of them
--- @error BAD_ARGS            not from 2 to 11 keys and 0 arguments
--- @error TOO_MANY_FRIENDS    the friends set holds more than 300 users
--- @complexity O(F × N), F = the friends, N = the minutes
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 2 or #KEYS > 11 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected from 2 to 11 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local friends = KEYS[1]
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whoever the friends are.
for m = 2, #KEYS do
  redis.call('SCARD', KEYS[m])
end
local count = redis.call('SCARD', friends)
if count > 300 then
  return redis.error_reply('TOO_MANY_FRIENDS the friends set holds ' .. count .. ' users; at most 300')
end
local online, seen = {}, {}
if count == 0 then
  return online
end
-- SINTER walks the smaller set (the friends) in C: one lookup per friend per minute.
for m = 2, #KEYS do
  for _, friend in ipairs(redis.call('SINTER', friends, KEYS[m])) do
    if not seen[friend] then
      seen[friend] = true
      online[#online + 1] = friend
    end
  end
  if #online == count then
    break
  end
end
return online
