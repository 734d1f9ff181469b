--- Helpers that scripts of several families share, each defined here once.
--- `redis-patterns fix` pastes the ones a script names in `@uses` (and those they call)
--- into it, and the build refuses a copy that differs from this file. Keys come in as
--- parameters, named apart from the scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- The hour whose totals a zset of hourly statistics holds, as its `start` key keeps it:
-- whole seconds, a multiple of 3600, or nil when none is kept yet; nil and an error
-- reply when the key holds something else.
local function held_hour(start_key)
  local held = redis.call('GET', start_key)
  if held and not (safe_integer(held, 0, 999999999999) and tonumber(held) % 3600 == 0) then
    return nil, redis.error_reply('BAD_START ' .. shown(start_key) .. ' holds ' .. shown(held)
      .. ', not the start of an hour in whole seconds')
  end
  return held
end

-- Moves hourly statistics on to the hour that starts at `hour` (whole seconds, as text):
-- when `held` (as held_hour read it) is an earlier hour, the current zset becomes the last
-- hour's, and the hour before last goes.
local function rotate_hour(current_key, last_key, start_key, pstart_key, held, hour)
  if not held then
    redis.call('SET', start_key, hour)
  elseif tonumber(held) < tonumber(hour) then
    -- UNLINK: the hour before last may be big; it is freed in the background.
    redis.call('UNLINK', last_key)
    if redis.call('EXISTS', current_key) == 1 then
      redis.call('RENAME', current_key, last_key)
    end
    redis.call('SET', pstart_key, held)
    redis.call('SET', start_key, hour)
  end
end
