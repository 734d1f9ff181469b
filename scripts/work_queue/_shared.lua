--- Helpers of the work_queue scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- A parked job is the member <8 hex digits: the group's length><group><16-digit rank><id>,
-- so that one group's parked jobs are one lexicographic range, in rank order.
local function parked_prefix(group)
  return string.format('%08x', #group) .. group
end

-- Up to n parked jobs of `group` in `parked_set`, first first, each as { member, id, rank };
-- nil and an error reply for a member that take.lua did not write. Reads only.
local function parked_of(parked_set, group, n)
  local prefix = parked_prefix(group)
  local members = redis.call('ZRANGE', parked_set, '[' .. prefix, '(' .. prefix .. ':', 'BYLEX', 'LIMIT', 0, n)
  local found = {}
  for i, member in ipairs(members) do
    local rank = string.match(string.sub(member, #prefix + 1, #prefix + 16), '^' .. string.rep('%d', 16) .. '$')
    rank = rank and tonumber(rank)
    -- A rank as take.lua writes it (from 1 to 2559999999999999), then a job id.
    if not (rank and rank >= 1 and rank <= 2559999999999999 and #member > #prefix + 16) then
      return nil, redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
    end
    found[i] = { member = member, id = string.sub(member, #prefix + 17), rank = rank }
  end
  return found
end

-- Moves parked jobs (as parked_of read them) back to waiting, at their ranks; how many.
local function unpark(parked_set, waiting_set, jobs_hash, found)
  for _, job in ipairs(found) do
    redis.call('ZREM', parked_set, job.member)
    redis.call('ZADD', waiting_set, job.rank, job.id)
    redis.call('HSET', jobs_hash, 's:' .. job.id, 'waiting')
  end
  return #found
end

-- The running count of `group`; nil and an error reply for a count these scripts did not
-- write (they write a count of jobs, which one more or one fewer keeps a count).
local function running_of(groups_hash, group)
  local running = redis.call('HGET', groups_hash, 'r:' .. group)
  if running and not safe_integer(running, 0, 999999999999999) then
    return nil, redis.error_reply('BAD_GROUPS the running count of group ' .. shown(group) .. ' is '
      .. shown(running) .. ', not what these scripts write')
  end
  return tonumber(running or '0')
end

-- What a job of `group` ending needs, read before its writes: the group's first parked
-- job (a list of at most one); nil and an error reply when the group's running count or
-- that job is not what these scripts write.
local function slot_of(groups_hash, parked_set, group)
  local _, bad = running_of(groups_hash, group)
  if bad then
    return nil, bad
  end
  return parked_of(parked_set, group, 1)
end

-- A job of `group` no longer runs: one fewer running, and `first` (as slot_of read it)
-- goes back to waiting; how many went back.
local function release_slot(groups_hash, parked_set, waiting_set, jobs_hash, group, first)
  if redis.call('HINCRBY', groups_hash, 'r:' .. group, -1) <= 0 then
    redis.call('HDEL', groups_hash, 'r:' .. group)
  end
  return unpark(parked_set, waiting_set, jobs_hash, first)
end

-- Tells workers blocked on `signal_key` (BZPOPMIN) that a job may be ready: the key holds
-- at most one member, so it stays one member however many jobs wait.
local function wake_workers(signal_key)
  redis.call('ZADD', signal_key, 0, 'ready')
end

-- The group of job `job_id` (false for none) when it is held under `job_token`; nil and a
-- LEASE_LOST error reply when it is not. Reads only.
local function held_group(jobs_hash, job_id, job_token)
  local state, held, group = unpack(redis.call('HMGET', jobs_hash, 's:' .. job_id, 't:' .. job_id, 'g:' .. job_id))
  -- A token is text: the caller's random part and the delivery count (see take.lua).
  if held ~= job_token then
    return nil, redis.error_reply('LEASE_LOST job ' .. shown(job_id) .. ' is ' .. (state or 'gone')
      .. ', not held under this token')
  end
  return group
end

-- A held job that ended well: out of `leased_set` and the jobs hash (its group's slot is
-- the caller's to release).
local function forget_job(leased_set, jobs_hash, job_id)
  redis.call('ZREM', leased_set, job_id)
  redis.call('HDEL', jobs_hash, 'd:' .. job_id, 's:' .. job_id, 'r:' .. job_id, 'n:' .. job_id,
    'g:' .. job_id, 't:' .. job_id, 'e:' .. job_id)
end
