--- Helpers of the rw_lock scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- The write hold in hash `writer_key` (`t` the holder's token, `n` how many times it took
-- the hold, `f` its fencing token; the key's expiry is the lease), read and checked before
-- any write: the token, count and fence, or nothing when the lock has no writer; or nil,
-- nil, nil and an error reply when the hash holds what these scripts never write.
local function write_hold(writer_key)
  local hold = redis.call('HMGET', writer_key, 't', 'n', 'f')
  local fields = redis.call('HLEN', writer_key)
  if fields == 0 then
    return nil
  end
  local t, n, f = hold[1], hold[2], hold[3]
  if fields ~= 3 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (n and safe_integer(n, 1, 9007199254740990))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, nil, redis.error_reply('BAD_WRITER ' .. shown(writer_key)
      .. ' holds no write hold (fields t, n and f)')
  end
  return t, tonumber(n), tonumber(f)
end

-- How many read holds `token` has in hash `holds_key`, checked before any write: 0 when
-- none; nil and an error reply when the count is no whole number from 1.
local function read_count(holds_key, holder)
  local count = redis.call('HGET', holds_key, holder)
  if not count then
    return 0
  end
  if not safe_integer(count, 1, 9007199254740990) then
    return nil, redis.error_reply('BAD_READ_HOLDS ' .. shown(holds_key) .. ' counts '
      .. shown(count) .. ' holds for the token')
  end
  return tonumber(count)
end

