#!lua flags=no-writes
--- Whether two users follow each other (the book's `is_following_each_other`), read at one moment.
---
--- 《Redis 应用实例》 chapter 18 reads both lists in a MULTI with ZRANK (O(log N)); here
--- ZSCORE (O(1)) in one script.
--- @key a_following zset {<namespace>}:following:<user>   `user`'s followed users
--- @key b_following zset {<namespace>}:following:<other>  `other`'s followed users
--- @arg user string non-empty    one user
--- @arg other string non-empty   the other
--- @return bool               1 if each follows the other
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_USER            empty
--- @error BAD_OTHER           empty
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(1)
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
local a_following = KEYS[1]
local b_following = KEYS[2]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER must not be empty')
end
local other = ARGV[2]
if other == '' then
  return redis.error_reply('BAD_OTHER must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_cut(a_following, '', ':following:' .. user)
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply(
      'BAD_KEYS KEYS[1] must be {<namespace>}:following:<user> with <user> = ARGV[1], got ' .. shown(a_following))
end
if b_following ~= tag_of_keys .. ':following:' .. other then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:following:<other> with <namespace> as in a_following and <other> = ' ..
      'ARGV[2], got ' .. shown(b_following))
end
-- End of the generated input checks.
local a_follows = redis.call('ZSCORE', a_following, other)
local b_follows = redis.call('ZSCORE', b_following, user)
return (a_follows and b_follows) and 1 or 0
