--- Removes a job that is not running: waiting, delayed, parked or dead (dropping a dead letter).
---
--- Beyond the books. A leased job is left to its worker, which acks or nacks it: removing
--- it under the worker would let the worker's ack fail for no reason of its own.
--- Reply: whether the job was removed, and the state it was in (nil when there is no job
--- with this id).
--- @key waiting zset             job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key delayed zset             job id -> when it becomes waiting (ms, server clock)
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset              held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @return (bool, string?)       removed, and the state it was in
--- @error BAD_ARGS               not 5 keys and 1 argument
--- @error BAD_ID                 empty
--- @error BAD_JOBS               `jobs` holds a field of the job these scripts did not write; nothing was written
--- @complexity O(log N), N = the jobs
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
if #KEYS ~= 5 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local dead = KEYS[3]
local parked = KEYS[4]
local jobs = KEYS[5]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, delayed, dead, parked }) do
  redis.call('ZCARD', zset)
end
local state, group, rank = unpack(redis.call('HMGET', jobs, 's:' .. id, 'g:' .. id, 'r:' .. id))
if not state then
  return { 0, false }
end
if state == 'leased' then
  return { 0, state }
end
if state == 'parked' then
  if not (group and rank and integer(rank, '1', '2559999999999999')) then
    return redis.error_reply('BAD_JOBS parked job ' .. shown(id) .. ' has the group ' .. shown(group or '')
      .. ' and the rank ' .. shown(rank or ''))
  end
  -- Its name in `parked`, as take.lua wrote it.
  redis.call('ZREM', parked, string.format('%08x', #group) .. group .. string.format('%016d', tonumber(rank)) .. id)
else
  redis.call('ZREM', waiting, id)
  redis.call('ZREM', delayed, id)
  redis.call('ZREM', dead, id)
end
redis.call('HDEL', jobs, 'd:' .. id, 's:' .. id, 'r:' .. id, 'n:' .. id, 'g:' .. id, 't:' .. id, 'e:' .. id)
return { 1, state }
