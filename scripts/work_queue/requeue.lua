--- Moves a job from the dead-letter queue back to waiting, with its delivery count reset.
---
--- Beyond the books. The job keeps its id, payload, priority and group, and its last
--- error until it fails again; it goes behind the jobs already waiting at its priority.
--- A job that is not dead is left alone.
--- @key waiting zset             job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @return bool                  whether the job was dead and is now waiting
--- @error BAD_ARGS               not 3 keys and 1 argument
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
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local dead = KEYS[2]
local jobs = KEYS[3]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, dead }) do
  redis.call('ZCARD', zset)
end
if redis.call('HGET', jobs, 's:' .. id) ~= 'dead' then
  return 0
end
-- Everything that can be refused is read before the first write.
local old_rank, last_seq = unpack(redis.call('HMGET', jobs, 'r:' .. id, '#seq'))
if not (old_rank and integer(old_rank, '1', '2559999999999999')) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(old_rank or ''))
end
if last_seq and not integer(last_seq, '0', '9999999999999') then
  return redis.error_reply('BAD_JOBS the arrival counter #seq is ' .. shown(last_seq))
end
local priority = 255 - math.floor(tonumber(old_rank) / 10000000000000)
local seq = redis.call('HINCRBY', jobs, '#seq', 1)
if seq >= 10000000000000 then
  seq = 1
  redis.call('HSET', jobs, '#seq', seq)
end
local rank = (255 - priority) * 10000000000000 + seq
redis.call('ZREM', dead, id)
redis.call('ZADD', waiting, rank, id)
redis.call('HSET', jobs, 's:' .. id, 'waiting', 'r:' .. id, rank, 'n:' .. id, 0)
return 1
