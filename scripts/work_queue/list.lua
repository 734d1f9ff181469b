#!lua flags=no-writes
--- Lists one page of the jobs in a state, for operators.
---
--- Beyond the books. Waiting jobs come in the order they will be taken, delayed jobs by
--- due time, leased jobs by deadline, dead jobs by when they died, parked jobs by group.
--- A page is read at one instant; pages read one after another may skip or repeat a job
--- that moved in between.
--- Reply: seven items per job: id, deliveries, priority, group ('' for none), last error
--- ('' for none), payload, and the time that goes with the state (as in `job.lua`).
--- @key waiting zset             job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key delayed zset             job id -> when it becomes waiting (ms, server clock)
--- @key leased zset              job id -> lease deadline (ms, server clock)
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset              held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg state string waiting|delayed|leased|dead|parked   the state to list
--- @arg offset uint 0..=10^9     how many jobs of the state to skip
--- @arg count uint 1..=100       the most jobs listed
--- @return [bytes]               id, deliveries, priority, group, last error, payload, time for each job
--- @error BAD_ARGS               not 6 keys and 3 arguments
--- @error BAD_STATE              not one of its choices
--- @error BAD_OFFSET             not an integer within its range
--- @error BAD_COUNT              not an integer within its range
--- @error BAD_JOBS               `jobs` holds a rank for a listed job that these scripts did not write
--- @error BAD_PARKED             `parked` holds a member that take.lua did not write
--- @complexity O(log N + M), N = the jobs in the state, M = `count`
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
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
if #KEYS ~= 6 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 6 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local state = ARGV[1]
if state ~= 'waiting' and state ~= 'delayed' and state ~= 'leased' and state ~= 'dead' and state ~= 'parked' then
  return redis.error_reply(
      'BAD_STATE state must be one of waiting, delayed, leased, dead, parked, got ' .. shown(state))
end
local offset = safe_integer(ARGV[2], 0, 1000000000)
if not offset then
  return redis.error_reply('BAD_OFFSET offset must be an integer from 0 to 1000000000, got ' .. shown(ARGV[2]))
end
local count = safe_integer(ARGV[3], 1, 100)
if not count then
  return redis.error_reply('BAD_COUNT count must be an integer from 1 to 100, got ' .. shown(ARGV[3]))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whichever state is asked for.
for _, zset in ipairs({ waiting, delayed, leased, dead, parked }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', jobs)
local zsets = { waiting = waiting, delayed = delayed, leased = leased, dead = dead, parked = parked }
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
  local fields = redis.call('HMGET', jobs, 'n:' .. id, 'r:' .. id, 'g:' .. id, 'e:' .. id, 'd:' .. id)
  if fields[2] and not integer(fields[2], '1', '2559999999999999') then
    return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(fields[2]))
  end
  -- A member whose record was deleted by hand has nothing to show (take.lua drops it).
  if fields[2] then
    local at = ''
    if state == 'delayed' or state == 'leased' or state == 'dead' then
      at = members[i + 1]
    end
    page[#page + 1] = id
    page[#page + 1] = fields[1] or '0'
    page[#page + 1] = tostring(255 - math.floor(tonumber(fields[2]) / 10000000000000))
    page[#page + 1] = fields[3] or ''
    page[#page + 1] = fields[4] or ''
    page[#page + 1] = fields[5] or ''
    page[#page + 1] = at
  end
end
return page
