#!lua flags=no-writes
--- The distance between two pinned members, in km (the book's `Location.distance`).
---
--- 《Redis 应用实例》 chapter 25: GEODIST in km. Nil when either is not pinned, or its pin
--- expired.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @arg x string non-empty    one member
--- @arg y string non-empty    the other
--- @return float?             km; nil when either is not pinned
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_X               empty
--- @error BAD_Y               empty
--- @uses live
--- @clock server
--- @complexity O(log N), N = the members
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local x = ARGV[1]
if x == '' then
  return redis.error_reply('BAD_X x must not be empty')
end
local y = ARGV[2]
if y == '' then
  return redis.error_reply('BAD_Y y must not be empty')
end
-- End of the generated input checks.
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- geo/_shared.lua of the scripts folder).
-- Whether `who` is pinned in `places_set` and its pin has not expired by `now`.
local function live(places_set, deadlines_set, who, now)
  if not redis.call('ZSCORE', places_set, who) then
    return false
  end
  local deadline = redis.call('ZSCORE', deadlines_set, who)
  return not deadline or tonumber(deadline) > now
end
-- End of the shared helpers.
-- O(1) reads that fail with WRONGTYPE whatever is pinned.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if not live(places, deadlines, x, now) or not live(places, deadlines, y, now) then
  return false
end
return redis.call('GEODIST', places, x, y, 'km')
