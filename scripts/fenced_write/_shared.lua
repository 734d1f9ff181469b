--- Helpers of the fenced_write scripts, each defined here once. `redis-patterns fix`
--- pastes the ones a script names in `@uses` (and those they call) into it, and the build
--- refuses a copy that differs from this file. Keys come in as parameters, named apart
--- from the scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- The highest fencing token `max_key` has seen, 0 when none; nil and an error reply when
-- it holds something other than a token, or a STALE_TOKEN error reply when
-- `fencing_token` is below it. Reads only.
local function fence_check(max_key, fencing_token)
  local stored = redis.call('GET', max_key)
  local highest = 0
  if stored then
    highest = safe_integer(stored, 1, 9007199254740991)
    if not highest then
      return nil, redis.error_reply('BAD_MAX_TOKEN ' .. shown(max_key) .. ' holds ' .. shown(stored)
        .. ', not a fencing token from 1 to 2^53 - 1')
    end
  end
  if fencing_token < highest then
    return nil, redis.error_reply('STALE_TOKEN highest ' .. string.format('%d', highest) .. ', token '
      .. string.format('%d', fencing_token) .. ': a write with a token below the highest seen is refused')
  end
  return highest
end
