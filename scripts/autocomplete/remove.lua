--- Removes a content from the suggestion table of each of its prefixes, in one step.
---
--- Beyond the book, which has no way to take a suggestion back. Tables left empty are
--- deleted by Redis.
--- @key tables... zset 1..=64 {<subject>}:<prefix>  the prefix tables of the content, shortest prefix first
--- @arg content string non-empty   the content to remove
--- @return uint               how many tables held it
--- @error BAD_ARGS            not from 1 to 64 keys and 1 argument
--- @error BAD_CONTENT         empty
--- @complexity O(P log T), P = the prefixes, T = a table's entries
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 1 or #KEYS > 64 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected from 1 to 64 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local content = ARGV[1]
if content == '' then
  return redis.error_reply('BAD_CONTENT content must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
for i = 1, #KEYS do
  redis.call('ZCARD', KEYS[i])
end
local removed = 0
for i = 1, #KEYS do
  removed = removed + redis.call('ZREM', KEYS[i], content)
end
return removed
