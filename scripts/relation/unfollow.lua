--- Makes `user` stop following `target`, on both sides at once (the book's `unfollow`).
---
--- 《Redis 应用实例》 chapter 18 (`Relation.unfollow`): ZREM on both sides, in one step.
--- @key following zset {<namespace>}:following:<user>    `user`'s followed users -> when followed (ms)
--- @key followers zset {<namespace>}:followers:<target>  `target`'s followers -> when they followed (ms)
--- @arg user string non-empty      who stops following
--- @arg target string non-empty    whom
--- @return bool               1 if the follow was there
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_USER            empty
--- @error BAD_TARGET          empty
--- @complexity O(log N), N = the larger of the two lists
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local following = KEYS[1]
local followers = KEYS[2]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER user must not be empty')
end
local target = ARGV[2]
if target == '' then
  return redis.error_reply('BAD_TARGET target must not be empty')
end
-- End of the generated input checks.
-- O(1) read that fails with WRONGTYPE before anything is written.
redis.call('ZCARD', followers)
local removed = redis.call('ZREM', following, target)
redis.call('ZREM', followers, user)
return removed
