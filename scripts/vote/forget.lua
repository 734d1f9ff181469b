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
--- @complexity O(log S), S = the subjects ranked (the vote sets are freed in the background)
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
  return redis.error_reply('BAD_SUBJECT subject must not be empty')
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
