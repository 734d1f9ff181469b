#!lua flags=no-writes
--- A subject's up and down votes, and one user's vote, read at one moment.
---
--- 《Redis 应用实例》 chapter 21 (`Vote.total`, `is_voted`). The book's `is_voted` answers
--- `a or b` of two SISMEMBERs, so it cannot tell an up vote from a down vote; here the
--- user's vote is 1 (up), -1 (down) or 0 (none).
--- @key up set {<namespace>}:up:<subject>      the users who voted the subject up
--- @key down set {<namespace>}:down:<subject>  the users who voted it down
--- @arg user bytes           whose vote to report (any bytes); empty for nobody's
--- @return (int, int, int)    ups, downs, the user's vote: 1 up, -1 down, 0 none
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local up = KEYS[1]
local down = KEYS[2]
local user = ARGV[1]
-- End of the generated input checks.
local mine = 0
if user ~= '' then
  if redis.call('SISMEMBER', up, user) == 1 then
    mine = 1
  elseif redis.call('SISMEMBER', down, user) == 1 then
    mine = -1
  end
end
return { redis.call('SCARD', up), redis.call('SCARD', down), mine }
