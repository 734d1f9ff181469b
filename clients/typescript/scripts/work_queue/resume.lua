--- Resumes a paused queue: `take.lua` hands out jobs again, and one idle worker wakes.
---
--- Beyond the books, for operators. Clears the `#paused` field of `jobs` that `pause.lua`
--- set, and fills `signal` so that a worker waiting with `BZPOPMIN` wakes at once; its
--- `take.lua` fills `signal` again while jobs are left, waking the next.
--- @key jobs hash {<name>}:jobs        <x>:<id>: the jobs' fields; `#paused` is 1 while the queue is paused
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @return bool                  whether the queue was paused (false: it was running already)
--- @error BAD_ARGS               not 2 keys and 0 arguments
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a `#paused` these scripts did not write; nothing was written
--- @uses wake_workers shown
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; work_queue/_shared.lua of the scripts folder).
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
-- Tells workers blocked on `signal_key` (BZPOPMIN) that a job may be ready: the key holds
-- at most one member, so it stays one member however many jobs wait.
local function wake_workers(signal_key)
  redis.call('ZADD', signal_key, '0', 'ready')
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local jobs = KEYS[1]
local signal = KEYS[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(jobs, '^(.+):jobs$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:jobs, got ' .. shown(jobs))
end
if signal ~= tag_of_keys .. ':signal' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:signal with <name> as in jobs, got ' .. shown(signal))
end
-- End of the generated input checks.
-- O(1) read that fails with WRONGTYPE before anything is written.
redis.call('ZCARD', signal)
local paused = redis.call('HGET', jobs, '#paused')
if paused and paused ~= '1' then
  return redis.error_reply('BAD_JOBS the pause flag #paused is ' .. shown(paused) .. ', not 1')
end
if not paused then
  return 0
end
redis.call('HDEL', jobs, '#paused')
wake_workers(signal)
return 1
