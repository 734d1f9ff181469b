--- Renews the lease on a job: it is held for `lease` from now.
---
--- Beyond the books. A worker whose job runs long calls this well before its deadline
--- (a third of the lease is a good interval). Only the holder of the job's current lease
--- can renew it: LEASE_LOST means the job was handed to another worker (or acked, or
--- removed) and this worker should stop working on it.
--- @key leased zset {<name>}:leased  job id -> lease deadline (ms, server clock)
--- @key jobs hash {<name>}:jobs      <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @arg token string non-empty   the lease token `take.lua` returned with the job
--- @arg lease ms 1..=10^15-1    the new lease, from now
--- @return int                   the new deadline (ms, server clock)
--- @error BAD_ARGS               not 2 keys and 3 arguments
--- @error BAD_ID                 empty
--- @error BAD_TOKEN              empty
--- @error BAD_LEASE              not whole milliseconds within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @uses shown
--- @default lease 30000          WorkQueue::new: a 30 s lease
--- @clock server
--- @complexity O(log N), N = the jobs
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local leased = KEYS[1]
local jobs = KEYS[2]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local lease = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(leased, '^(.+):leased$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:leased, got ' .. shown(leased))
end
if jobs ~= tag_of_keys .. ':jobs' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:jobs with <name> as in leased, got ' .. shown(jobs))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
redis.call('ZCARD', leased)

-- The caller must hold the job's current lease.
local state, held = unpack(redis.call('HMGET', jobs, 's:' .. id, 't:' .. id))
if held ~= token then
  return redis.error_reply('LEASE_LOST job ' .. shown(id) .. ' is ' .. (state or 'gone')
    .. ', not held under this token')
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', leased, now + lease, id)
return now + lease
