#!lua flags=no-writes
--- Reads one job: its state, deliveries, group, last error, payload, progress, children, times and result.
---
--- Beyond the books, for operators and for a caller whose add was deduplicated.
--- The time that goes with a job's state is when a delayed job is due, when a lease runs
--- out, when a job died, when it completed, or when a blocked flow parent was added;
--- waiting and parked jobs have none. A completed
--- job (kept while the queue keeps completed jobs: see `configure.lua`) has its result, and
--- it and a job leased or ended since the queue began to keep them when its last delivery
--- started.
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg id string non-empty      the job's id
--- @return (string, uint, uint, string?, bytes?, bytes, uint?, bytes?, uint, bytes?, uint?, bytes?)?  the job:
---                               its state, deliveries, priority, group (nil for none), last error (nil for none),
---                               payload, the time that goes with its state (ms, server clock; nil for
---                               none), its last progress report (nil for none), and for a flow's parent
---                               the children it still waits for and the failed ones it lists
---                               (`<length>:<id>` each; see add_flow.lua; nil for none), when its last
---                               delivery started (nil for none kept), and its result when completed (nil
---                               for none); nil when there is no job with this id
--- @error BAD_ARGS               not 6 keys and 1 argument
--- @error BAD_ID                 empty
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a rank or delivery count for the job that these scripts did not write
--- @error BAD_TIME               the job's time in its state's set, or when it started, is not whole ms
--- @uses safe_integer shown
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 6 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 6 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delayed = KEYS[1]
local leased = KEYS[2]
local dead = KEYS[3]
local jobs = KEYS[4]
local completed = KEYS[5]
local blocked = KEYS[6]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(delayed, '^(.+):delayed$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:delayed, got ' .. shown(delayed))
end
if leased ~= tag_of_keys .. ':leased' or dead ~= tag_of_keys .. ':dead' or jobs ~= tag_of_keys .. ':jobs' or
    completed ~= tag_of_keys .. ':completed' or blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':leased', ':dead', ':jobs', ':completed', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in delayed, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whichever state is asked for.
for _, zset in ipairs({ delayed, leased, dead, completed, blocked }) do
  redis.call('ZCARD', zset)
end
local fields = redis.call('HMGET', jobs, 's:' .. id, 'n:' .. id, 'r:' .. id, 'g:' .. id, 'e:' .. id, 'd:' .. id,
  'p:' .. id, 'w:' .. id, 'x:' .. id, 'b:' .. id, 'v:' .. id)
local state = fields[1]
if not state then
  return false
end
local at = false
if state == 'delayed' then
  at = redis.call('ZSCORE', delayed, id)
elseif state == 'leased' then
  at = redis.call('ZSCORE', leased, id)
elseif state == 'dead' then
  at = redis.call('ZSCORE', dead, id)
elseif state == 'completed' then
  at = redis.call('ZSCORE', completed, id)
elseif state == 'blocked' then
  at = redis.call('ZSCORE', blocked, id)
end
if not (fields[3] and safe_integer(fields[3], 1, 2559999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(fields[3] or ''))
end
if fields[2] and not safe_integer(fields[2], 0, 999999999999999) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the delivery count ' .. shown(fields[2]))
end
if fields[8] and not safe_integer(fields[8], 1, 100) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' waits for ' .. shown(fields[8]) .. ' children')
end
if at and not safe_integer(at, 0, 999999999999999) then
  return redis.error_reply('BAD_TIME job ' .. shown(id) .. ' is ' .. state .. ' at ' .. shown(at)
    .. ', not whole ms from 0 to 10^15 - 1')
end
if fields[10] and not safe_integer(fields[10], 0, 999999999999999) then
  return redis.error_reply('BAD_TIME job ' .. shown(id) .. ' started at ' .. shown(fields[10])
    .. ', not whole ms from 0 to 10^15 - 1')
end
local priority = 255 - math.floor(tonumber(fields[3]) / 10000000000000)
-- Counts and times are whole and below 2^53: integer replies; false is nil.
return { state, tonumber(fields[2] or '0'), priority, fields[4] or false, fields[5] or false, fields[6] or '',
  at and tonumber(at) or false, fields[7] or false, tonumber(fields[8] or '0'), fields[9] or false,
  fields[10] and tonumber(fields[10]) or false, fields[11] or false }
