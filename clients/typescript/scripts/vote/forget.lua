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
  return redis.error_reply('BAD_SUBJECT must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_cut(up, '', ':up:' .. subject)
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply(
      'BAD_KEYS KEYS[1] must be {<namespace>}:up:<subject> with <subject> = ARGV[1], got ' .. shown(up))
end
if down ~= tag_of_keys .. ':down:' .. subject then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:down:<subject> with <namespace> as in up and <subject> = ARGV[1], got ' ..
      shown(down))
end
if posted ~= tag_of_keys .. ':posted' or hot_rank ~= tag_of_keys .. ':hot' or best_rank ~= tag_of_keys .. ':best' then
  for i, each in ipairs({ ':posted', ':hot', ':best' }) do
    if KEYS[i + 2] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 2 .. '] must be {<namespace>}' .. each .. ' with <namespace> as in up, got ' ..
          shown(KEYS[i + 2]))
    end
  end
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
