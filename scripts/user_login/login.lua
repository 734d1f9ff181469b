--- Records a login by `name`: its count, its time, the recent logins and the ranking, in one step.
---
--- The 2011 Redis Cookbook's user login system. The cookbook logs a login in four to six
--- separate commands (look the name up, INCR its count, SET its time, LPUSH and LTRIM
--- the recent list, ZINCRBY the ranking), so two logins at once can interleave and a
--- crash can leave the count and the ranking apart. Here it is one script, and the count
--- and the ranking are one sorted set, so they never disagree. A name that was never
--- registered records nothing and answers nil.
--- @key ids hash {<name>}:ids        name -> user id (registered with HSETNX)
--- @key counts zset {<name>}:counts  user id -> logins: each user's count, and the ranking
--- @key last hash {<name>}:last      user id -> the time of its last login (ms, server clock)
--- @key recent list {<name>}:recent  the ids of the latest logins, newest first
--- @arg name bytes non-empty     the name logging in (any bytes)
--- @arg keep uint 1..=10000   how many latest logins `recent` keeps
--- @return (bytes?, int)      the user's id (any bytes), or nil; its login count (0 for an unknown name)
--- @error BAD_ARGS            not 4 keys and 2 arguments
--- @error BAD_NAME            empty
--- @error BAD_KEEP            not an integer within its range
--- @clock server
--- @complexity O(log N + M), N = the users, M = logins trimmed from `recent` (one per call while `keep` stays)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
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
if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local ids = KEYS[1]
local counts = KEYS[2]
local last = KEYS[3]
local recent = KEYS[4]
local name = ARGV[1]
if name == '' then
  return redis.error_reply('BAD_NAME name must not be empty')
end
local keep = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP keep must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`ids` is read first).
redis.call('ZCARD', counts)
redis.call('HLEN', last)
redis.call('LLEN', recent)

local uid = redis.call('HGET', ids, name)
if not uid then
  return { false, 0 }
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local count = redis.call('ZINCRBY', counts, 1, uid)
redis.call('HSET', last, uid, now)
redis.call('LPUSH', recent, uid)
redis.call('LTRIM', recent, 0, keep - 1)
return { uid, tonumber(count) }
