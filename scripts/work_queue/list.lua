#!lua flags=no-writes
--- Lists one page of the jobs in a state, for operators.
---
--- Beyond the books. Waiting jobs come in the order they will be taken, delayed jobs by
--- due time, leased jobs by deadline, dead jobs by when they died, parked jobs by group,
--- completed jobs (while the queue keeps them: see `configure.lua`) by when they completed,
--- blocked flow parents (see `add_flow.lua`) by when they were added; ties by id.
--- A page is read at one instant; pages read one after another may skip or repeat a job
--- that moved in between.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg state string waiting|delayed|leased|dead|parked|completed|blocked   the state to list
--- @arg offset uint 0..=10^9     how many jobs of the state to skip
--- @arg count uint 1..=100       the most jobs listed
--- @return [(string, uint, uint, string?, bytes?, bytes, uint?, uint?)]  a row per job: its id,
---                               deliveries, priority, group (nil for none), last error (nil for none),
---                               payload, the time that goes with its state, and when its last delivery
---                               started, as `job.lua` answers them
--- @error BAD_ARGS               not 8 keys and 3 arguments
--- @error BAD_STATE              not one of its choices
--- @error BAD_OFFSET             not an integer within its range
--- @error BAD_COUNT              not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a listed job's rank, delivery count or start these scripts did not write
--- @error BAD_PARKED             `parked` holds a member that take.lua did not write
--- @uses safe_integer shown
--- @complexity O(log N + M), N = the jobs in the state, M = `count`
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
if #KEYS ~= 8 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 8 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local completed = KEYS[7]
local blocked = KEYS[8]
local state = ARGV[1]
if state ~= 'waiting' and state ~= 'delayed' and state ~= 'leased' and state ~= 'dead' and state ~= 'parked' and
    state ~= 'completed' and state ~= 'blocked' then
  return redis.error_reply(
      'BAD_STATE must be one of waiting, delayed, leased, dead, parked, completed, blocked, got ' .. shown(state))
end
local offset = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not offset or offset > 1000000000 then
  return redis.error_reply('BAD_OFFSET must be an integer from 0 to 1000000000, got ' .. shown(ARGV[2]))
end
local count = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not count or count > 100 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 100, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or leased ~= tag_of_keys .. ':leased' or dead ~= tag_of_keys .. ':dead' or
    parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or completed ~= tag_of_keys .. ':completed' or
    blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':leased', ':dead', ':parked', ':jobs', ':completed', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whichever state is asked for.
for _, zset in ipairs({ waiting, delayed, leased, dead, parked, completed, blocked }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', jobs)
local zsets = { waiting = waiting, delayed = delayed, leased = leased, dead = dead, parked = parked,
  completed = completed, blocked = blocked }
local members = redis.call('ZRANGE', zsets[state], offset, offset + count - 1, 'WITHSCORES')
local page = {}
for i = 1, #members, 2 do
  local id = members[i]
  if state == 'parked' then
    -- <8 hex digits: the group's length><group><16-digit rank><id>, as take.lua names it.
    local length = string.match(id, '^%x%x%x%x%x%x%x%x') and tonumber(string.sub(id, 1, 8), 16)
    if not length or #id < 8 + length + 16 then
      return redis.error_reply('BAD_PARKED parked holds ' .. shown(id) .. ', not a parked job')
    end
    id = string.sub(id, 8 + length + 17)
  end
  local fields = redis.call('HMGET', jobs, 'n:' .. id, 'r:' .. id, 'g:' .. id, 'e:' .. id, 'd:' .. id, 'b:' .. id)
  if fields[2] and not safe_integer(fields[2], 1, 2559999999999999) then
    return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(fields[2]))
  end
  if fields[1] and not safe_integer(fields[1], 0, 999999999999999) then
    return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the delivery count ' .. shown(fields[1]))
  end
  -- A member whose record was deleted by hand has nothing to show (take.lua drops it).
  if fields[2] then
    local at = false
    if state ~= 'waiting' and state ~= 'parked' then
      at = tonumber(members[i + 1])
    end
    -- Counts and times are whole and below 2^53: integer replies; false is nil.
    local started = fields[6] and safe_integer(fields[6], 0, 999999999999999)
    if fields[6] and not started then
      return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' started at ' .. shown(fields[6]))
    end
    page[#page + 1] = { id, tonumber(fields[1] or '0'), 255 - math.floor(tonumber(fields[2]) / 10000000000000),
      fields[3] or false, fields[4] or false, fields[5] or '', at, started or false }
  end
end
return page
