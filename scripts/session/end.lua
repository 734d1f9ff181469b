--- Ends sessions of one user by their ids (a "log out this device" button), data and all.
---
--- 《Redis 应用实例》 chapter 19 (`Session.destroy`), for one session among several. A
--- session's id is the SHA-1 of its token (see create.lua), so an app can list a user's
--- sessions (list.lua) and end one without holding its token. Ids the user does not have
--- are ignored. Expired sessions of the user are forgotten first. Logging out everywhere
--- needs no script: `DEL sessions records`.
--- @key sessions zset {<namespace>:<uid>}:sessions  session id -> deadline (ms, server clock)
--- @key records hash {<namespace>:<uid>}:records    `t:<id>` -> the session's ttl (ms); `d:<id>` -> its data
--- @arg ids string... 1..=100    the ids of the sessions to end
--- @return uint               how many of them were live sessions, now ended
--- @error BAD_ARGS            not 2 keys and from 1 to 100 arguments
--- @uses sweep forget outlive_sessions
--- @clock server
--- @complexity O((E + M) log N), E = sessions expired (at most 1000), M = ids given, N = the user's sessions
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV < 1 or #ARGV > 100 then
  return redis.error_reply('BAD_ARGS expected 2 keys and from 1 to 100 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local sessions = KEYS[1]
local records = KEYS[2]
-- End of the generated input checks.
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- session/_shared.lua of the scripts folder).
-- Ends the sessions `ids`: out of the index, and their records with them, 1000 at a time
-- (the most arguments one command is given here).
local function forget(sessions_set, records_hash, ids)
  local fields = {}
  for _, gone in ipairs(ids) do
    fields[#fields + 1] = 't:' .. gone
    fields[#fields + 1] = 'd:' .. gone
  end
  for i = 1, #ids, 1000 do
    redis.call('ZREM', sessions_set, unpack(ids, i, math.min(i + 999, #ids)))
  end
  for i = 1, #fields, 1000 do
    redis.call('HDEL', records_hash, unpack(fields, i, math.min(i + 999, #fields)))
  end
end
-- Ends up to 1000 sessions that expired by `now`: each call sweeps a bounded share.
local function sweep(sessions_set, records_hash, now)
  forget(sessions_set, records_hash, redis.call('ZRANGEBYSCORE', sessions_set, '-inf', now, 'LIMIT', 0, 1000))
end
-- Both keys live as long as the session that lasts longest, if one is left.
local function outlive_sessions(sessions_set, records_hash)
  local last = redis.call('ZRANGE', sessions_set, -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIREAT', sessions_set, last[2])
    redis.call('PEXPIREAT', records_hash, last[2])
  end
end
-- End of the shared helpers.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', sessions)
redis.call('HLEN', records)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

sweep(sessions, records, now)
local ended = {}
for i = 1, #ARGV do
  if redis.call('ZSCORE', sessions, ARGV[i]) then
    ended[#ended + 1] = ARGV[i]
  end
end
if #ended == 0 then
  return 0
end
forget(sessions, records, ended)
outlive_sessions(sessions, records)
return #ended
