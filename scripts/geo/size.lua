#!lua flags=no-writes
--- How many members are pinned, leaving out expired pins (the book's `Location.size`).
---
--- 《Redis 应用实例》 chapter 25: ZCARD, less the pins that expired and are not purged yet.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @return uint              the members pinned
--- @error BAD_ARGS            not 2 keys and 0 arguments
--- @clock server
--- @complexity O(log N), N = the pins with a ttl
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
-- End of the generated input checks.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
return redis.call('ZCARD', places) - redis.call('ZCOUNT', deadlines, '-inf', now)
