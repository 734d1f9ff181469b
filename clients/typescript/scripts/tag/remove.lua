--- Untags a target, keeping both directions of the index in one step (the book's `remove`).
---
--- 《Redis 应用实例》 chapter 15 (`Tag.remove`), as add.lua in reverse. Tags the target
--- does not have are ignored.
--- @key target_tags set {<namespace>}:target:<target>  the target's tags
--- @key tag_targets... set 1..=100 {<namespace>}:tag:<tag>  each tag's targets, in the order of `tag`
--- @arg target string non-empty    the target
--- @arg tag string... 1..=100 non-empty   the tags, one per key of `tag_targets`
--- @return uint               how many of the tags the target had
--- @error BAD_ARGS            not from 2 to 101 keys and from 2 to 101 arguments, or not one tag per key of tag_targets
--- @error BAD_TARGET          empty
--- @error BAD_TAG             a value is empty
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(M), M = the tags given
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- What key name `s` holds between `head` and `tail`, when it is `head`, at least one byte,
-- then `tail`; else nil.
local function key_cut(s, head, tail)
  local stop = #s - #tail
  if stop > #head and string.sub(s, 1, #head) == head and string.sub(s, stop + 1) == tail then
    return string.sub(s, #head + 1, stop)
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 2 or #KEYS > 101 or #ARGV < 2 or #ARGV > 101 then
  return redis.error_reply(
      'BAD_ARGS expected from 2 to 101 keys and from 2 to 101 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local target_tags = KEYS[1]
local target = ARGV[1]
if target == '' then
  return redis.error_reply('BAD_TARGET must not be empty')
end
for i = 2, #ARGV do
  if ARGV[i] == '' then
    return redis.error_reply('BAD_TAG ARGV[' .. i .. '] must not be empty')
  end
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if #KEYS - 2 ~= #ARGV - 2 then
  return redis.error_reply(
      'BAD_ARGS expected one tag per key of tag_targets, got ' .. (#KEYS - 1) .. ' and ' .. (#ARGV - 1))
end
local tag_of_keys = key_cut(target_tags, '', ':target:' .. target)
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply(
      'BAD_KEYS KEYS[1] must be {<namespace>}:target:<target> with <target> = ARGV[1], got ' .. shown(target_tags))
end
for i = 2, #KEYS do
  if KEYS[i] ~= tag_of_keys .. ':tag:' .. ARGV[i] then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i ..
        '] must be {<namespace>}:tag:<tag> with <namespace> as in target_tags and <tag> from the tag arguments, got ' ..
        shown(KEYS[i]))
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
for i = 1, #KEYS do
  redis.call('SCARD', KEYS[i])
end
local removed = redis.call('SREM', target_tags, unpack(ARGV, 2))
for i = 2, #KEYS do
  redis.call('SREM', KEYS[i], target)
end
return removed
