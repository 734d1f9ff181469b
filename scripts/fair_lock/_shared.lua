--- Helpers of the fair_lock scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown ring_bell

-- The holder in hash `owner_key` (`t` its token, `f` its fencing token; the key's expiry
-- is the lease), read and checked before any write: the token and fence; or, for a lock
-- just freed with waiters, nil, nil and the passes left (`b`, see ring_for_next); nothing
-- when the lock is free; or nil, nil, nil and an error reply when the hash holds what
-- these scripts never write.
local function lock_owner(owner_key)
  local hold = redis.call('HMGET', owner_key, 't', 'f', 'b')
  local fields = redis.call('HLEN', owner_key)
  if fields == 0 then
    return nil
  end
  local t, f, b = hold[1], hold[2], hold[3]
  if fields == 1 and b and safe_integer(b, 0, 1000) then
    return nil, nil, tonumber(b)
  end
  if fields ~= 2 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end

-- Wakes one waiter of the free lock in `owner_key` (ring_bell; `rings` as there), and lets up
-- to `passes` woken waiters that cannot take it (not first in line) ring again, so that
-- the one that can wakes even when another was blocked longer. The passes are kept in the
-- owner hash as `b` for a second: a waiter blocks at most that long before it runs its
-- script again anyway.
local function ring_for_next(owner_key, bell_key, rings, passes)
  redis.call('DEL', owner_key)
  redis.call('HSET', owner_key, 'b', math.min(passes, 1000))
  redis.call('PEXPIRE', owner_key, 1000)
  ring_bell(bell_key, rings)
end
