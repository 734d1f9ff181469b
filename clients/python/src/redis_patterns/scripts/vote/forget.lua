--- Forgets a subject: its votes, its posting time and its place in both rankings.
---
--- Beyond the book, whose votes are never removed. The vote sets are unlinked, so a big
--- one is freed in the background.
--- @key up set {<namespace>}:up:<subject>      the users who voted the subject up
--- @key down set {<namespace>}:down:<subject>  the users who voted it down
--- @key posted hash {<namespace>}:posted       subject -> when it was posted (ms)
--- @key hot_rank zset {<namespace>}:hot        subject -> its "hot" rank
--- @key best_rank zset {<namespace>}:best      subject -> its "best" rank
--- @arg subject string non-empty   the subject
--- @return bool               1 if the subject had votes or a place in the rankings
--- @error BAD_ARGS            not 5 keys and 1 argument
--- @error BAD_SUBJECT         empty
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(log S), S = the subjects ranked (the vote sets are freed in the background)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
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
if #KEYS ~= 5 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local up = KEYS[1]
local down = KEYS[2]
local posted = KEYS[3]
local hot_rank = KEYS[4]
local best_rank = KEYS[5]
local subject = ARGV[1]
if subject == '' then
  return redis.error_reply('BAD_SUBJECT subject must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_cut(up, '', ':up:' .. subject)
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply(
      'BAD_KEYS up must be {<namespace>}:up:<subject> with <subject> = ARGV[1], but KEYS[1] is ' .. shown(up))
end
if down ~= tag_of_keys .. ':down:' .. subject then
  return redis.error_reply(
      'BAD_KEYS down must be {<namespace>}:down:<subject> with <namespace> as in up and <subject> = ARGV[1], but ' ..
      'KEYS[2] is ' .. shown(down))
end
if posted ~= tag_of_keys .. ':posted' then
  return redis.error_reply(
      'BAD_KEYS posted must be {<namespace>}:posted with <namespace> as in up, but KEYS[3] is ' .. shown(posted))
end
if hot_rank ~= tag_of_keys .. ':hot' then
  return redis.error_reply(
      'BAD_KEYS hot_rank must be {<namespace>}:hot with <namespace> as in up, but KEYS[4] is ' .. shown(hot_rank))
end
if best_rank ~= tag_of_keys .. ':best' then
  return redis.error_reply(
      'BAD_KEYS best_rank must be {<namespace>}:best with <namespace> as in up, but KEYS[5] is ' .. shown(best_rank))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('SCARD', up)
redis.call('SCARD', down)
redis.call('HLEN', posted)
redis.call('ZCARD', hot_rank)
redis.call('ZCARD', best_rank)
local forgotten = redis.call('UNLINK', up, down)
  + redis.call('HDEL', posted, subject)
  + redis.call('ZREM', hot_rank, subject)
  + redis.call('ZREM', best_rank, subject)
return forgotten > 0 and 1 or 0
