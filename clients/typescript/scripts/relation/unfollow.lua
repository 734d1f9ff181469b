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
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(log N), N = the larger of the two lists
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
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local following = KEYS[1]
local followers = KEYS[2]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER must not be empty')
end
local target = ARGV[2]
if target == '' then
  return redis.error_reply('BAD_TARGET must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_cut(following, '', ':following:' .. user)
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply(
      'BAD_KEYS KEYS[1] must be {<namespace>}:following:<user> with <user> = ARGV[1], got ' .. shown(following))
end
if followers ~= tag_of_keys .. ':followers:' .. target then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:followers:<target> with <namespace> as in following and <target> = ' ..
      'ARGV[2], got ' .. shown(followers))
end
-- End of the generated input checks.
-- O(1) read that fails with WRONGTYPE before anything is written.
redis.call('ZCARD', followers)
local removed = redis.call('ZREM', following, target)
redis.call('ZREM', followers, user)
return removed
