--- Helpers of the fair_lock scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- The holder in hash `owner_key` (`t` its token, `f` its fencing token; the key's expiry
-- is the lease), read and checked before any write: the token and fence, or nothing when
-- the lock is free; or nil, nil and an error reply when the hash holds what these scripts
-- never write.
local function lock_owner(owner_key)
  local all = redis.call('HGETALL', owner_key)
  if #all == 0 then
    return nil
  end
  local hold = {}
  for i = 1, #all, 2 do
    hold[all[i]] = all[i + 1]
  end
  local t, f = hold.t, hold.f
  if #all ~= 4 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
