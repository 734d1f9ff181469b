--- Helpers of the session scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

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

-- An error reply when `deadline` (a score of the sessions set, as Redis spells it) is
-- not whole ms, as these scripts write deadlines; nothing when it is, or when it is nil.
local function bad_deadline(id, deadline)
  if deadline and not safe_integer(deadline, 0, 9007199254740991) then
    return redis.error_reply('BAD_SESSIONS session ' .. shown(id) .. ' lasts until ' .. shown(deadline)
      .. ', not a time in whole ms')
  end
end

-- The check, before the first write, of the deadline that outlive_sessions gives both
-- keys: the latest one, which the call's own deadlines (whole ms) can only raise.
local function bad_last(sessions_set)
  local last = redis.call('ZRANGE', sessions_set, -1, -1, 'WITHSCORES')
  return bad_deadline(last[1], last[2])
end
