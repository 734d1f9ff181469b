--- Untags a target, keeping both directions of the index in one step (the book's `remove`).
---
--- 《Redis 应用实例》 chapter 15 (`Tag.remove`), as add.lua in reverse. Tags the target
--- does not have are ignored.
--- @key target_tags set {<namespace>}:target:<target>  the target's tags
--- @key tag_targets... set 1..=100 {<namespace>}:tag:<tag>  each tag's targets, in the order of `tags`
--- @arg target string non-empty    the target
--- @arg tags string... 1..=100     the tags, one per key of `tag_targets`
--- @return uint               how many of the tags the target had
--- @error BAD_ARGS            not from 2 to 101 keys and from 2 to 101 arguments; or not as many tags as tag keys
--- @error BAD_TARGET          empty
--- @error BAD_TAGS            a tag is empty
--- @complexity O(M), M = the tags given
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 2 or #KEYS > 101 or #ARGV < 2 or #ARGV > 101 then
  return redis.error_reply(
      'BAD_ARGS expected from 2 to 101 keys and from 2 to 101 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local target_tags = KEYS[1]
local target = ARGV[1]
if target == '' then
  return redis.error_reply('BAD_TARGET target must not be empty')
end
-- End of the generated input checks.
if #ARGV - 1 ~= #KEYS - 1 then
  return redis.error_reply('BAD_ARGS ' .. (#KEYS - 1) .. ' tag keys but ' .. (#ARGV - 1) .. ' tags')
end
for i = 2, #ARGV do
  if ARGV[i] == '' then
    return redis.error_reply('BAD_TAGS tag ' .. (i - 1) .. ' is empty')
  end
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
for i = 1, #KEYS do
  redis.call('SCARD', KEYS[i])
end
local removed = redis.call('SREM', target_tags, unpack(ARGV, 2))
for i = 2, #KEYS do
  redis.call('SREM', KEYS[i], target)
end
return removed
