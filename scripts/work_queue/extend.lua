--- Renews the lease on a job: it is held for `lease` from now.
---
--- Beyond the books. A worker whose job runs long calls this well before its deadline
--- (a third of the lease is a good interval). Only the holder of the job's current lease
--- can renew it: LEASE_LOST means the job was handed to another worker (or acked, or
--- removed) and this worker should stop working on it.
--- @key leased zset              job id -> lease deadline (ms, server clock)
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @arg token uint 1..=10^15-1   the lease token `take.lua` returned with the job
--- @arg lease ms 1..=10^15-1    the new lease, from now
--- @return int                   the new deadline (ms, server clock)
--- @error BAD_ARGS               not 2 keys and 3 arguments
--- @error BAD_ID                 `id` is empty
--- @error BAD_TOKEN              `token` is not an integer from 1 to 10^15 - 1
--- @error BAD_LEASE              `lease` is not whole milliseconds from 1 to 10^15 - 1
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @clock server
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
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local leased = KEYS[1]
local jobs = KEYS[2]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
local token = integer(ARGV[2], '1', '999999999999999')
if not token then
  return redis.error_reply('BAD_TOKEN token must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
token = tonumber(token)
local lease = integer(ARGV[3], '1', '999999999999999')
if not lease then
  return redis.error_reply(
      'BAD_LEASE lease must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
lease = tonumber(lease)
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
redis.call('ZCARD', leased)

-- The caller must hold the job's current lease.
local state, held = unpack(redis.call('HMGET', jobs, 's:' .. id, 't:' .. id))
-- Compared as text: a token is stored as take.lua wrote it, in the one form of integers.
if held ~= string.format('%d', token) then
  return redis.error_reply('LEASE_LOST job ' .. shown(id) .. ' is ' .. (state or 'gone')
    .. ', not held under token ' .. ARGV[2])
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', leased, now + lease, id)
return now + lease
