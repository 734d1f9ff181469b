--- Helpers of the semaphore scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- The semaphore's state as `state_key` keeps it: { capacity = nil when never set, used =
-- the permits held, seq = the queue's last ticket }; nil and an error reply when a field
-- holds something these scripts never write. Reads only.
local function semaphore_state(state_key)
  local fields = redis.call('HMGET', state_key, 'capacity', 'used', 'seq')
  local rules = { { 'capacity', 1000 }, { 'used', 1000 }, { 'seq', 9007199254740990 } }
  local st = { used = 0, seq = 0 }
  local known = 0
  for i, rule in ipairs(rules) do
    if fields[i] then
      known = known + 1
      local value = safe_integer(fields[i], 0, rule[2])
      if not value then
        return nil, redis.error_reply('BAD_STATE ' .. shown(state_key) .. ' holds ' .. rule[1] .. ' = '
          .. shown(fields[i]) .. ', not a whole number from 0 to ' .. rule[2])
      end
      st[rule[1]] = value
    end
  end
  if redis.call('HLEN', state_key) ~= known then
    return nil, redis.error_reply('BAD_STATE ' .. shown(state_key)
      .. ' holds a field these scripts never write (they write capacity, used and seq)')
  end
  return st
end

-- The permits `holder` holds as `held_key` keeps them, 0 when none; nil and an error reply
-- when its count is not one these scripts write (1 to 1000). Reads only.
local function held_permits(held_key, holder)
  local count = redis.call('HGET', held_key, holder)
  if not count then
    return 0
  end
  local permits = safe_integer(count, 1, 1000)
  if not permits then
    return nil, redis.error_reply('BAD_HELD ' .. shown(held_key) .. ' holds ' .. shown(count) .. ' permits for '
      .. shown(holder) .. ', not a whole number from 1 to 1000')
  end
  return permits
end
