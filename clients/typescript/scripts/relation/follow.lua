--- Makes `user` follow `target`, on both sides at once (the book's `follow`); following again keeps the first time.
---
--- 《Redis 应用实例》 chapter 18 (`Relation.follow`), which ZADDs both sides in a MULTI and,
--- on a second follow, overwrites both times; nothing stops a user following itself.
--- Here a second follow changes nothing (ZADD NX, on each side), and following oneself is
--- refused. Each side's time is the server's clock in ms, moved on by a millisecond past
--- the newest entry of that side when it would tie with it, so that no two entries of
--- one list share a time: a page cursor (ZREVRANGEBYSCORE from the last time seen) then
--- never skips or repeats an entry. The two sides may hold times a few ms apart.
--- @key following zset {<namespace>}:following:<user>    `user`'s followed users -> when followed (ms)
--- @key followers zset {<namespace>}:followers:<target>  `target`'s followers -> when they followed (ms)
--- @arg user string non-empty      who follows
--- @arg target string non-empty    whom
--- @return bool               1 if the follow is new
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_USER            empty
--- @error BAD_TARGET          empty
--- @error BAD_KEYS            a key not named as its template says
--- @error SELF_FOLLOW         `user` and `target` are the same user
--- @clock server
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
if user == target then
  return redis.error_reply('SELF_FOLLOW a user cannot follow itself')
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', following)
redis.call('ZCARD', followers)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Adds `member` to `list` at a time no other entry of `list` has, unless it is there.
local function add(list, member)
  if redis.call('ZSCORE', list, member) then
    return 0
  end
  local newest = redis.call('ZREVRANGE', list, 0, 0, 'WITHSCORES')[2]
  local at = now
  if newest and tonumber(newest) >= at then
    at = tonumber(newest) + 1
  end
  return redis.call('ZADD', list, at, member)
end

local new = add(following, target)
add(followers, user)
return new
