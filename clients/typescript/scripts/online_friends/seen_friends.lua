#!lua flags=no-writes
--- The friends of a user seen within the last `window` (design b).
---
--- 《Redis入门指南》 §5.3.4, design b. The book takes the range of recent users into a
--- temporary key in five steps through shared temporary keys, so concurrent callers
--- overwrite each other's; here the friends' last-seen times are read in one ZMSCORE,
--- with no temporary key. The friends set holds at most 1,000 users (a lookup each in a
--- set of all the users seen costs a few microseconds). A friend seen at
--- `now - window` exactly is online (the book's online-users query counts it, its
--- online-friends query does not; here both count it).
--- @key friends set {<ns>}:friends:<user>  the user's friends
--- @key seen zset {<ns>}:last.seen         user -> when it was last seen (ms)
--- @arg now uint 0..=10^15-1  the time, in milliseconds
--- @arg window ms 1..=10^15-1    how recent "online" is
--- @return [string]           the friends seen within `window`
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_NOW             not an integer within its range
--- @error BAD_WINDOW          not whole milliseconds within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error TOO_MANY_FRIENDS    the friends set holds more than 1,000 users
--- @clock caller
--- @complexity O(F × log N), F = the friends, N = the users remembered
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- What key name `s` holds between `head` and `tail`, when it is `head`, at least one byte,
-- then `tail`; else nil.
local function key_cut(s, head, tail)
  local stop = #s - #tail
  if stop > #head and string.sub(s, 1, #head) == head and string.sub(s, stop + 1) == tail then
    return string.sub(s, #head + 1, stop)
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local friends = KEYS[1]
local seen = KEYS[2]
local now = ARGV[1] == '0' and 0 or tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not now or now > 999999999999999 then
  return redis.error_reply('BAD_NOW must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[1]))
end
local window = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not window or window > 999999999999999 then
  return redis.error_reply('BAD_WINDOW must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(seen, '^(.+):last%.seen$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<ns>}:last.seen, got ' .. shown(seen))
end
if not key_cut(friends, tag_of_keys .. ':friends:', '') then
  return redis.error_reply(
      'BAD_KEYS KEYS[1] must be {<ns>}:friends:<user> with <ns> as in seen, got ' .. shown(friends))
end
-- End of the generated input checks.
redis.call('ZCARD', seen)
local count = redis.call('SCARD', friends)
if count > 1000 then
  return redis.error_reply('TOO_MANY_FRIENDS the friends set holds ' .. count .. ' users; at most 1000')
end
local everyone = redis.call('SMEMBERS', friends)
local online = {}
local since = now - window
if #everyone == 0 then
  return online
end
local scores = redis.call('ZMSCORE', seen, unpack(everyone))
for i, score in ipairs(scores) do
  if score and tonumber(score) >= since then
    online[#online + 1] = everyone[i]
  end
end
return online
