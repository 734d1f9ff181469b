#!lua flags=no-writes
--- Whether two users follow each other (the book's `is_following_each_other`), read at one moment.
---
--- 《Redis 应用实例》 chapter 18 reads both lists in a MULTI with ZRANK (O(log N)); here
--- ZSCORE (O(1)) in one script.
--- @key a_following zset {<namespace>}:following:<user>   `a`'s followed users
--- @key b_following zset {<namespace>}:following:<other>  `b`'s followed users
--- @arg a string non-empty    one user
--- @arg b string non-empty    the other
--- @return bool               1 if each follows the other
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_A               empty
--- @error BAD_B               empty
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local a_following = KEYS[1]
local b_following = KEYS[2]
local a = ARGV[1]
if a == '' then
  return redis.error_reply('BAD_A a must not be empty')
end
local b = ARGV[2]
if b == '' then
  return redis.error_reply('BAD_B b must not be empty')
end
-- End of the generated input checks.
local a_follows = redis.call('ZSCORE', a_following, b)
local b_follows = redis.call('ZSCORE', b_following, a)
return (a_follows and b_follows) and 1 or 0
