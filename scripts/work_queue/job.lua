#!lua flags=no-writes
--- Reads one job: its state, deliveries, group, last error and payload.
---
--- Beyond the books, for operators and for a caller whose add was deduplicated.
--- Reply: empty when there is no job with this id; otherwise state, delivery count,
--- priority, group ('' for none), last error ('' for none), payload, and the time that
--- goes with the state (ms, server clock: when a delayed job is due, when a lease runs
--- out, when a job died; '' for waiting and parked jobs).
--- @key delayed zset             job id -> when it becomes waiting (ms, server clock)
--- @key leased zset              job id -> lease deadline (ms, server clock)
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @return [bytes]               state, deliveries, priority, group, last error, payload, time
--- @error BAD_ARGS               not 4 keys and 1 argument
--- @error BAD_ID                 empty
--- @error BAD_JOBS               `jobs` holds a rank for the job that these scripts did not write
--- @complexity O(1)
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
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delayed = KEYS[1]
local leased = KEYS[2]
local dead = KEYS[3]
local jobs = KEYS[4]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whichever state is asked for.
for _, zset in ipairs({ delayed, leased, dead }) do
  redis.call('ZCARD', zset)
end
local fields = redis.call('HMGET', jobs, 's:' .. id, 'n:' .. id, 'r:' .. id, 'g:' .. id, 'e:' .. id, 'd:' .. id)
local state = fields[1]
if not state then
  return {}
end
local at = false
if state == 'delayed' then
  at = redis.call('ZSCORE', delayed, id)
elseif state == 'leased' then
  at = redis.call('ZSCORE', leased, id)
elseif state == 'dead' then
  at = redis.call('ZSCORE', dead, id)
end
if not (fields[3] and integer(fields[3], '1', '2559999999999999')) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(fields[3] or ''))
end
local priority = 255 - math.floor(tonumber(fields[3]) / 10000000000000)
return { state, fields[2] or '0', tostring(priority), fields[4] or '', fields[5] or '', fields[6] or '', at or '' }
