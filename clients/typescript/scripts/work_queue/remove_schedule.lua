--- Removes a schedule; the jobs it added stay in the queue.
---
--- Beyond the books. A scheduler that read the schedule before fires nothing more of it
--- (fire.lua finds it gone).
--- @key schedules hash {<name>}:schedules  per schedule <s>: t timing, o revision catch_up priority, d payload, g group
--- @key due zset {<name>}:due              schedule -> its next run time (ms, server clock)
--- @arg schedule string non-empty  the schedule's name
--- @return bool                  whether there was such a schedule
--- @error BAD_ARGS               not 2 keys and 1 argument
--- @error BAD_SCHEDULE           empty
--- @error BAD_KEYS               a key not named as its template says
--- @complexity O(log S), S = the schedules
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local schedules = KEYS[1]
local due = KEYS[2]
local schedule = ARGV[1]
if schedule == '' then
  return redis.error_reply('BAD_SCHEDULE must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(schedules, '^(.+):schedules$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:schedules, got ' .. shown(schedules))
end
if due ~= tag_of_keys .. ':due' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:due with <name> as in schedules, got ' .. shown(due))
end
-- End of the generated input checks.
-- A read first: a `due` of another type fails with WRONGTYPE before anything is written.
local listed = redis.call('ZSCORE', due, schedule)
local removed = redis.call('HDEL', schedules, 't:' .. schedule, 'o:' .. schedule, 'd:' .. schedule, 'g:' .. schedule)
if listed then
  redis.call('ZREM', due, schedule)
end
return (removed > 0 or listed) and 1 or 0
