--- Tags a target, keeping both directions of the index in one step (the book's `add`).
---
--- 《Redis 应用实例》 chapter 15 (`Tag.add`): the target's set of tags, and each tag's set
--- of targets, written together, so that no reader ever finds a tag on a target that the
--- tag does not list (or the other way round). The book's MULTI is atomic too, but an
--- empty list of tags aborts it with an error; here it is refused before anything runs.
--- @key target_tags set {<namespace>}:target:<target>  the target's tags
--- @key tag_targets... set 1..=100 {<namespace>}:tag:<tag>  each tag's targets, in the order of `tags`
--- @arg target string non-empty    the target
--- @arg tags string... 1..=100     the tags, one per key of `tag_targets`
--- @return uint               how many tags the target did not have
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
local added = redis.call('SADD', target_tags, unpack(ARGV, 2))
for i = 2, #KEYS do
  redis.call('SADD', KEYS[i], target)
end
return added
