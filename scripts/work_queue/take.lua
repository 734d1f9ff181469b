--- Takes up to `limit` jobs, each under a lease of `lease`, in priority then arrival order.
---
--- Beyond the books: the heart of a reliable work queue. A queue is the ten keys below,
--- in one hash slot (the Rust `WorkQueue` derives them as `{name}:waiting`, …); every
--- `work_queue` script takes the ones it uses, in this order. Before taking, one call
--- does three bounded chores, on the server's clock: it hands back up to `limit` jobs
--- whose lease ran out (to `waiting`, or to `dead` once they were delivered
--- `max_deliveries` times), moves up to `limit` due delayed jobs to `waiting`, and
--- unparks up to `limit` jobs of groups whose rate window has passed. Then it examines at
--- most 4 × `limit` waiting jobs: a job whose group already runs `group_concurrency`
--- jobs, or started `group_rate` jobs in the last `group_period`, is parked (out of the
--- way of other groups' jobs) until a job of its group ends or the window passes; every
--- other job is taken. Last, it drops the start times of groups idle for a whole
--- `group_period` (about 1000 fields per call).
---
--- A non-Rust worker takes a job with this script, keeps the token, calls `extend.lua`
--- before the lease runs out, and ends with `ack.lua` (done) or `nack.lua` (failed), or
--- acks it in its next `take` (`done`: one call per job, or per batch, on a busy queue).
--- A worker that dies simply stops renewing: its job is handed out again after the lease.
--- A lease token is `token` (128 random bits the caller draws anew for every call) and the
--- delivery count, `<token>:<n>`: nothing the server remembers, so a replica promoted
--- after it missed some deliveries never hands out a token again. With nothing to take,
--- a worker waits on `signal` (`BZPOPMIN signal <seconds>`), which every script that makes
--- a job ready fills; this one fills it again while jobs are left, to wake the next
--- worker, and a wait's timeout finds the jobs whose delay ran out.
--- A taken job's delivery count is 1 on its first delivery, its deadline is in ms of the
--- server's clock, and its group is '' when it has none.
--- A rank or delivery count of a lapsed or due job that is no count (another client wrote
--- it) is refused before any write, and so is an ack of `done` that fails. What is read
--- later (a group's counts, a parked job, a waiting job's record) is checked where it is
--- read: the call stops there with that job back in its place, and the ack, the chores
--- and the jobs before it stay done.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see parked_prefix)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key groups hash {<name>}:groups  per group g: r:<g> running; p:<g> started, z:<g> ring size, s:<g>:<i> start times
--- @key wake zset {<name>}:wake        group -> when its rate window lets a parked job start (ms)
--- @key idle zset {<name>}:idle        group -> when its ring of start times stops mattering (ms), to drop it
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @arg lease ms 1..=10^15-1    how long each job is held before it is handed out again
--- @arg limit uint 1..=25        the most jobs taken, and the bound on each chore (4 × `limit` examined)
--- @arg max_deliveries uint 1..=1000    a job whose lease runs out after this many deliveries goes to `dead`
--- @arg group_concurrency uint 0..=10^6 the most jobs of one group held at once; 0 for no limit
--- @arg group_rate uint 0..=1000        the most jobs of one group started per `group_period`; 0 for no limit
--- @arg group_period ms 1..=10^10       the window of `group_rate`
--- @arg token string hex:32      128 random bits as 32 hex digits, drawn anew for every call
--- @arg done string... 0..=50   id, token, id, token, …: jobs this worker finished, acked first as `ack.lua` acks one
--- @return [(string, string, uint, uint, string, bytes)] per job: id, token, delivery, deadline ms, group, payload
--- @error BAD_ARGS               not 10 keys and from 7 to 57 arguments
--- @error BAD_LEASE              not whole milliseconds within its range
--- @error BAD_LIMIT              not an integer within its range
--- @error BAD_MAX_DELIVERIES     not an integer within its range
--- @error BAD_GROUP_CONCURRENCY  not an integer within its range
--- @error BAD_GROUP_RATE         not an integer within its range
--- @error BAD_GROUP_PERIOD       not whole milliseconds within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_TOKEN              not 32 hex digits
--- @error BAD_DONE               an id without its token: `done` holds an odd number of values
--- @error LEASE_LOST             a job of `done` is not held under its token, or is there twice; nothing was written
--- @error BAD_JOBS               `jobs` holds a rank or delivery count that is no count (see below)
--- @error BAD_GROUPS             `groups` holds a running count or start time that is no count (see below)
--- @error BAD_PARKED             `parked` holds a member this script did not write (see below)
--- @uses running_of parked_of unpark slot_of release_slot parked_prefix held_group forget_job wake_workers
--- @default lease 30000          WorkQueue::new: a 30 s lease
--- @default max_deliveries 5     WorkQueue::new: 5 deliveries
--- @clock server
--- @complexity O(M × log N + R), N = the jobs, M = `limit`, R = `group_rate`
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
end
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
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
if #KEYS ~= 10 or #ARGV < 7 or #ARGV > 57 then
  return redis.error_reply('BAD_ARGS expected 10 keys and from 7 to 57 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local groups = KEYS[7]
local wake = KEYS[8]
local idle = KEYS[9]
local signal = KEYS[10]
local lease = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply(
      'BAD_LEASE lease must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
local limit = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not limit or limit > 25 then
  return redis.error_reply('BAD_LIMIT limit must be an integer from 1 to 25, got ' .. shown(ARGV[2]))
end
local max_deliveries = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not max_deliveries or max_deliveries > 1000 then
  return redis.error_reply(
      'BAD_MAX_DELIVERIES max_deliveries must be an integer from 1 to 1000, got ' .. shown(ARGV[3]))
end
local group_concurrency = tonumber(string.match(ARGV[4], '^[1-9]%d*$') or string.match(ARGV[4], '^0$'))
if not group_concurrency or group_concurrency > 1000000 then
  return redis.error_reply(
      'BAD_GROUP_CONCURRENCY group_concurrency must be an integer from 0 to 1000000, got ' .. shown(ARGV[4]))
end
local group_rate = tonumber(string.match(ARGV[5], '^[1-9]%d*$') or string.match(ARGV[5], '^0$'))
if not group_rate or group_rate > 1000 then
  return redis.error_reply('BAD_GROUP_RATE group_rate must be an integer from 0 to 1000, got ' .. shown(ARGV[5]))
end
local group_period = tonumber(string.match(ARGV[6], '^[1-9]%d*$'))
if not group_period or group_period > 10000000000 then
  return redis.error_reply(
      'BAD_GROUP_PERIOD group_period must be whole milliseconds from 1 to 10000000000, got ' .. shown(ARGV[6]))
end
local token = ARGV[7]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN token must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS waiting must be {<name>}:waiting, but KEYS[1] is ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' then
  return redis.error_reply(
      'BAD_KEYS delayed must be {<name>}:delayed with <name> as in waiting, but KEYS[2] is ' .. shown(delayed))
end
if leased ~= tag_of_keys .. ':leased' then
  return redis.error_reply(
      'BAD_KEYS leased must be {<name>}:leased with <name> as in waiting, but KEYS[3] is ' .. shown(leased))
end
if dead ~= tag_of_keys .. ':dead' then
  return redis.error_reply(
      'BAD_KEYS dead must be {<name>}:dead with <name> as in waiting, but KEYS[4] is ' .. shown(dead))
end
if parked ~= tag_of_keys .. ':parked' then
  return redis.error_reply(
      'BAD_KEYS parked must be {<name>}:parked with <name> as in waiting, but KEYS[5] is ' .. shown(parked))
end
if jobs ~= tag_of_keys .. ':jobs' then
  return redis.error_reply(
      'BAD_KEYS jobs must be {<name>}:jobs with <name> as in waiting, but KEYS[6] is ' .. shown(jobs))
end
if groups ~= tag_of_keys .. ':groups' then
  return redis.error_reply(
      'BAD_KEYS groups must be {<name>}:groups with <name> as in waiting, but KEYS[7] is ' .. shown(groups))
end
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply(
      'BAD_KEYS wake must be {<name>}:wake with <name> as in waiting, but KEYS[8] is ' .. shown(wake))
end
if idle ~= tag_of_keys .. ':idle' then
  return redis.error_reply(
      'BAD_KEYS idle must be {<name>}:idle with <name> as in waiting, but KEYS[9] is ' .. shown(idle))
end
if signal ~= tag_of_keys .. ':signal' then
  return redis.error_reply(
      'BAD_KEYS signal must be {<name>}:signal with <name> as in waiting, but KEYS[10] is ' .. shown(signal))
end
-- End of the generated input checks.
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- work_queue/_shared.lua of the scripts folder).
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
    local rank = string.sub(member, #prefix + 1, #prefix + 16)
    if not string.match(rank, '^' .. string.rep('%d', 16) .. '$') then
      return nil, redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
    end
    found[i] = { member = member, id = string.sub(member, #prefix + 17), rank = tonumber(rank) }
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
-- write.
local function running_of(groups_hash, group)
  local running = redis.call('HGET', groups_hash, 'r:' .. group)
  if running and not integer(running, '-9223372036854775808', '9223372036854775807') then
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
-- End of the shared helpers.
-- O(1) reads that fail with WRONGTYPE before anything is written; an empty set's chore
-- is skipped.
local cards = {}
for _, zset in ipairs({ waiting, delayed, leased, dead, parked, wake, idle, signal }) do
  cards[zset] = redis.call('ZCARD', zset)
end
redis.call('HLEN', jobs)
redis.call('HLEN', groups)

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Stored counts are checked before they are used; an error reply names the field.
local function bad_jobs(what, value)
  return redis.error_reply('BAD_JOBS ' .. what .. ' is ' .. shown(value) .. ', not what these scripts write')
end
local function bad_groups(what, value)
  return redis.error_reply('BAD_GROUPS ' .. what .. ' is ' .. shown(value) .. ', not what these scripts write')
end

-- The rate window of a group is a ring of its last `group_rate` start times, in hash
-- fields: s:<group>:<i> for i = started mod ring size, so a check and a start cost O(1).
-- Drops a group's ring: its fields, as many as it holds; how many fields that was.
local function drop_ring(group)
  local started, size = unpack(redis.call('HMGET', groups, 'p:' .. group, 'z:' .. group))
  local fields = { 'p:' .. group, 'z:' .. group }
  -- A count that is no count drops only the two fields: the ring is rebuilt from nothing.
  started = started and safe_integer(started, 0, 999999999999999) or '0'
  size = size and safe_integer(size, 0, 1000) or '0'
  for i = 0, math.min(tonumber(started), tonumber(size)) - 1 do
    fields[#fields + 1] = 's:' .. group .. ':' .. i
  end
  redis.call('HDEL', groups, unpack(fields))
  return #fields
end

-- The start time that leaves the window last among the `group_rate` most recent, or nil
-- while the group started fewer. A ring of another size (the setting changed) is dropped.
local function rate_oldest(group)
  local started, size = unpack(redis.call('HMGET', groups, 'p:' .. group, 'z:' .. group))
  if not started then
    return nil
  end
  if not safe_integer(started, 0, 999999999999999) or size ~= string.format('%d', group_rate) then
    drop_ring(group)
    return nil
  end
  started = tonumber(started)
  if started < group_rate then
    return nil
  end
  local oldest = redis.call('HGET', groups, 's:' .. group .. ':' .. (started % group_rate))
  if not (oldest and safe_integer(oldest, 0, 999999999999999)) then
    return nil, bad_groups('start time ' .. (started % group_rate) .. ' of group ' .. shown(group), oldest or '')
  end
  return tonumber(oldest)
end

-- 1. Leases that ran out: the job goes back to waiting, or to dead after its last delivery.
-- Their records, and those of the due delayed jobs (step 2), are read and checked before
-- the first write.
local lapsed = cards[leased] > 0 and redis.call('ZRANGE', leased, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit) or {}
local records = {}
for i, id in ipairs(lapsed) do
  records[i] = redis.call('HMGET', jobs, 'g:' .. id, 'n:' .. id, 'r:' .. id)
  local group, deliveries, rank = unpack(records[i])
  if rank and not safe_integer(rank, 1, 2559999999999999) then
    return bad_jobs('the rank of job ' .. shown(id), rank)
  end
  if rank and not (deliveries and safe_integer(deliveries, 0, 999999999999999)) then
    return bad_jobs('the delivery count of job ' .. shown(id), deliveries or '')
  end
  if group then
    local _, bad = running_of(groups, group)
    if bad then
      return bad
    end
  end
end
local due = cards[delayed] > 0 and redis.call('ZRANGE', delayed, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit) or {}
local due_ranks = {}
for i, id in ipairs(due) do
  due_ranks[i] = redis.call('HGET', jobs, 'r:' .. id)
  if due_ranks[i] and not safe_integer(due_ranks[i], 1, 2559999999999999) then
    return bad_jobs('the rank of job ' .. shown(id), due_ranks[i])
  end
end

-- Before the chores write: the jobs this worker finished (`done`), acked as ack.lua acks
-- one. Everything that can refuse them is read before the first write: each is held under
-- its token (and named once), and each of their groups' running count and the parked jobs
-- that their ends let start.
local done = { unpack(ARGV, 8) }
if #done % 2 == 1 then
  return redis.error_reply('BAD_DONE done must be id, token pairs; got ' .. #done .. ' values')
end
local finished = {}
local ending = {}
for i = 1, #done, 2 do
  local id = done[i]
  local group, bad = held_group(jobs, id, done[i + 1])
  if bad then
    return bad
  end
  if finished[id] ~= nil then
    return redis.error_reply('LEASE_LOST job ' .. shown(id) .. ' is in done twice')
  end
  finished[id] = group
  finished[#finished + 1] = id
  if group then
    ending[group] = (ending[group] or 0) + 1
  end
end
local freed = {}
for group, n in pairs(ending) do
  local _, bad = running_of(groups, group)
  if bad then
    return bad
  end
  freed[group], bad = parked_of(parked, group, n)
  if bad then
    return bad
  end
end
for _, id in ipairs(finished) do
  local group = finished[id]
  forget_job(leased, jobs, id)
  if group then
    -- The group's next parked job, if it has one left: a list of at most one.
    release_slot(groups, parked, waiting, jobs, group, { table.remove(freed[group], 1) })
  end
end

for i, id in ipairs(lapsed) do
  local group, deliveries, rank = unpack(records[i])
  -- A finished job whose lease had run out was acked above: nothing to hand back.
  if finished[id] ~= nil then
    group, rank = false, false
  end
  redis.call('ZREM', leased, id)
  redis.call('HDEL', jobs, 't:' .. id)
  if group then
    local first, bad = slot_of(groups, parked, group)
    if bad then
      return bad
    end
    release_slot(groups, parked, waiting, jobs, group, first)
  end
  if not rank then
    -- No record (deleted by hand): nothing to hand back.
    redis.call('HDEL', jobs, 's:' .. id)
  elseif tonumber(deliveries) >= max_deliveries then
    redis.call('ZADD', dead, now, id)
    redis.call('HSET', jobs, 's:' .. id, 'dead', 'e:' .. id, 'lease ran out on the last delivery')
  else
    redis.call('ZADD', waiting, rank, id)
    redis.call('HSET', jobs, 's:' .. id, 'waiting')
  end
end

-- 2. Delayed jobs that are due.
for i, id in ipairs(due) do
  redis.call('ZREM', delayed, id)
  if due_ranks[i] then
    redis.call('ZADD', waiting, due_ranks[i], id)
    redis.call('HSET', jobs, 's:' .. id, 'waiting')
  else
    -- No record (deleted by hand): nothing to wait for.
    redis.call('HDEL', jobs, 's:' .. id)
  end
end

-- 3. Groups whose rate window has passed: as many parked jobs as may start now go back;
-- any left are parked again by step 4 with a new wake time, or freed by a job that ends.
local woken = cards[wake] > 0 and redis.call('ZRANGE', wake, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit) or {}
local budget = limit
for _, group in ipairs(woken) do
  redis.call('ZREM', wake, group)
  -- With no rate limit any more (the setting changed), as many as the budget allows.
  local n = group_rate > 0 and group_rate or budget
  if group_concurrency > 0 then
    local running, bad = running_of(groups, group)
    if bad then
      return bad
    end
    n = math.min(n, group_concurrency - running)
  end
  n = math.min(n, budget)
  if n > 0 then
    local found, bad = parked_of(parked, group, n)
    if bad then
      return bad
    end
    budget = budget - unpark(parked, waiting, jobs, found)
  end
  -- Out of budget: look again on the next call rather than leave the group parked.
  if budget == 0 then
    redis.call('ZADD', wake, now, group)
  end
end

-- 4. Take in rank order; park the jobs of groups at a limit. A record that cannot be read
-- stops the call with the popped job (ZPOPMIN's id and score) back in its place.
local function put_back(head, bad)
  redis.call('ZADD', waiting, head[2], head[1])
  return bad
end
local taken = {}
local count = 0
local examined = 0
local drained = false
while count < limit and examined < 4 * limit do
  local head = redis.call('ZPOPMIN', waiting)
  if #head == 0 then
    drained = true
    break
  end
  examined = examined + 1
  local id, rank = head[1], tonumber(head[2])
  local group, payload, deliveries = unpack(redis.call('HMGET', jobs, 'g:' .. id, 'd:' .. id, 'n:' .. id))
  if payload and deliveries and not safe_integer(deliveries, 0, 999999999999998) then
    return put_back(head, bad_jobs('the delivery count of job ' .. shown(id), deliveries))
  end
  -- A member without a record (deleted by hand) is dropped: there is nothing to run.
  local park = false
  if payload and group then
    local running, bad = running_of(groups, group)
    if bad then
      return put_back(head, bad)
    end
    if group_concurrency > 0 and running >= group_concurrency then
      park = true
    elseif group_rate > 0 then
      local oldest, bad_ring = rate_oldest(group)
      if bad_ring then
        return put_back(head, bad_ring)
      end
      if oldest and oldest + group_period > now then
        park = true
        redis.call('ZADD', wake, 'LT', oldest + group_period, group)
      end
    end
  end
  if not payload then
    redis.call('HDEL', jobs, 's:' .. id, 'r:' .. id, 'n:' .. id, 'g:' .. id, 't:' .. id, 'e:' .. id)
  elseif park then
    redis.call('ZADD', parked, 0, parked_prefix(group) .. string.format('%016d', rank) .. id)
    redis.call('HSET', jobs, 's:' .. id, 'parked')
  else
    local delivery = redis.call('HINCRBY', jobs, 'n:' .. id, 1)
    local held = token .. ':' .. delivery
    local deadline = now + lease
    redis.call('ZADD', leased, deadline, id)
    redis.call('HSET', jobs, 's:' .. id, 'leased', 't:' .. id, held)
    if group then
      redis.call('HINCRBY', groups, 'r:' .. group, 1)
      if group_rate > 0 then
        -- rate_oldest checked it, or dropped a ring it could not read.
        local started = tonumber(redis.call('HGET', groups, 'p:' .. group) or '0')
        redis.call('HSET', groups, 's:' .. group .. ':' .. (started % group_rate), now,
          'p:' .. group, started + 1, 'z:' .. group, group_rate)
        redis.call('ZADD', idle, now + group_period, group)
      end
    end
    count = count + 1
    -- Numbers go out as integer replies: each is whole and below 2^53.
    taken[count] = { id, held, delivery, deadline, group or '', payload }
  end
end

-- 5. Rings whose start times no longer count: dropped, at least one and about 1000
-- fields per call.
local quiet = cards[idle] > 0 and redis.call('ZRANGE', idle, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit) or {}
local dropped = 0
for _, group in ipairs(quiet) do
  if dropped >= 1000 then
    break
  end
  redis.call('ZREM', idle, group)
  dropped = dropped + drop_ring(group)
end

-- 6. Jobs are left ready (more than this call took, or back from a lapse or a delay):
-- the next waiting worker wakes.
if not drained and redis.call('ZCARD', waiting) > 0 then
  wake_workers(signal)
end
return taken
