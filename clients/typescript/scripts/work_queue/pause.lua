--- Pauses the queue: `take.lua` hands out nothing until `resume.lua`; adds are accepted.
---
--- Beyond the books, for operators (BullMQ's `pause`, Sidekiq Pro's `Queue#pause!`). The
--- flag is the field `#paused` of `jobs` (beside the arrival counter `#seq`), so `take.lua`
--- reads it with the keys it has. A paused `take.lua` still acks its `done` jobs and does
--- its bounded chores (lapsed leases, due delayed jobs), but takes no job and wakes no
--- worker; idle workers wait on `signal` as on an empty queue. Jobs already leased run on.
--- @key jobs hash {<name>}:jobs        <x>:<id>: the jobs' fields; `#paused` is 1 while the queue is paused
--- @return bool                  whether the queue was running (false: it was paused already)
--- @error BAD_ARGS               not 1 key and 0 arguments
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a `#paused` these scripts did not write; nothing was written
--- @uses shown
--- @complexity O(1)
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
if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 1 key and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local jobs = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(jobs, '^(.+):jobs$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:jobs, got ' .. shown(jobs))
end
-- End of the generated input checks.
local paused = redis.call('HGET', jobs, '#paused')
if paused and paused ~= '1' then
  return redis.error_reply('BAD_JOBS the pause flag #paused is ' .. shown(paused) .. ', not 1')
end
if paused then
  return 0
end
redis.call('HSET', jobs, '#paused', '1')
return 1
