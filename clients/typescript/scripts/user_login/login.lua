--- Records a login by `user`: its count, its time, the recent logins and the ranking, in one step.
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
--- @arg user bytes non-empty     the name logging in (any bytes)
--- @arg keep uint 1..=10000   how many latest logins `recent` keeps
--- @return (bytes?, int)      the user's id (any bytes), or nil; its login count (0 for an unknown name)
--- @error BAD_ARGS            not 4 keys and 2 arguments
--- @error BAD_USER            empty
--- @error BAD_KEEP            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_COUNTS          `counts` holds a login count of the user that is no count; nothing was written
--- @uses safe_integer shown
--- @clock server
--- @complexity O(log N + M), N = the users, M = logins trimmed from `recent` (one per call while `keep` stays)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local ids = KEYS[1]
local counts = KEYS[2]
local last = KEYS[3]
local recent = KEYS[4]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER must not be empty')
end
local keep = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(ids, '^(.+):ids$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:ids, got ' .. shown(ids))
end
if counts ~= tag_of_keys .. ':counts' or last ~= tag_of_keys .. ':last' or recent ~= tag_of_keys .. ':recent' then
  for i, each in ipairs({ ':counts', ':last', ':recent' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in ids, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`ids` is read first).
redis.call('ZCARD', counts)
redis.call('HLEN', last)
redis.call('LLEN', recent)

local uid = redis.call('HGET', ids, user)
if not uid then
  return { false, 0 }
end
local held = redis.call('ZSCORE', counts, uid)
if held and not safe_integer(held, 0, 9007199254740990) then
  return redis.error_reply('BAD_COUNTS the user\'s login count is ' .. shown(held) .. ', not a count')
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local count = redis.call('ZINCRBY', counts, 1, uid)
redis.call('HSET', last, uid, now)
redis.call('LPUSH', recent, uid)
redis.call('LTRIM', recent, 0, keep - 1)
return { uid, tonumber(count) }
