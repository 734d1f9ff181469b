--- Helpers of the short_url scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals integer safe_integer shown

-- Whether `link` has expired by `now`, or was visited as often as it allows; nil and an
-- error reply when `limits` or `visits` holds no count for it (another client wrote it).
local function over(expiries_set, limits_hash, visits_hash, link, now)
  local deadline = redis.call('ZSCORE', expiries_set, link)
  if deadline and tonumber(deadline) <= now then
    return true
  end
  local most, seen = redis.call('HGET', limits_hash, link), redis.call('HGET', visits_hash, link)
  if most and not safe_integer(most, 1, 999999999999999) then
    return nil, redis.error_reply('BAD_LIMITS the visit limit of the link is ' .. shown(most)
      .. ', not an integer from 1 to 10^15 - 1')
  end
  if seen and not integer(seen, '0', '9223372036854775807') then
    return nil, redis.error_reply('BAD_VISITS the visit count of the link is ' .. shown(seen)
      .. ', not an integer from 0 to 2^63 - 1')
  end
  return most ~= false and tonumber(seen or '0') >= tonumber(most)
end

-- Deletes `link` and everything kept about it.
local function forget(links_hash, expiries_set, limits_hash, visits_hash, link)
  redis.call('HDEL', links_hash, link)
  redis.call('ZREM', expiries_set, link)
  redis.call('HDEL', limits_hash, link)
  redis.call('HDEL', visits_hash, link)
end

-- A link's expiry (`now` + `life` ms) and visit limit (`most`), when it has them.
local function keep(expiries_set, limits_hash, link, now, life, most)
  if life then
    redis.call('ZADD', expiries_set, now + life, link)
  end
  if most then
    redis.call('HSET', limits_hash, link, most)
  end
end

-- The book's base62 of n: digits 0-9, then a-z, then A-Z (0 -> 0, 61 -> Z, 62 -> 10).
local function base62(n)
  local digits = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
  local text = ''
  repeat
    local d = n % 62
    text = string.sub(digits, d + 1, d + 1) .. text
    n = (n - d) / 62
  until n == 0
  return text
end
