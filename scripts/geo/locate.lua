#!lua flags=no-writes
--- Where `member` is pinned: longitude and latitude (the book's `Location.locate`).
---
--- 《Redis 应用实例》 chapter 25: GEOPOS. A member whose pin expired (see `pin.lua`) is
--- not there, as one never pinned.
--- @key places zset           the geo set (the book's key)
--- @key deadlines zset        member -> when its pin expires (ms, server clock)
--- @arg member string non-empty    the member
--- @return (float?, float?)   longitude and latitude; nil and nil when it is not pinned
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_MEMBER          empty
--- @clock server
--- @complexity O(log N), N = the members
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local member = ARGV[1]
if member == '' then
  return redis.error_reply('BAD_MEMBER member must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whatever is pinned.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Whether `who` is pinned and its pin has not expired.
local function live(who)
  if not redis.call('ZSCORE', places, who) then
    return false
  end
  local deadline = redis.call('ZSCORE', deadlines, who)
  return not deadline or tonumber(deadline) > now
end

if not live(member) then
  return { false, false }
end
local position = redis.call('GEOPOS', places, member)[1]
return { position[1], position[2] }
