--- Helpers of the latch scripts, each defined here once. `redis-patterns fix` pastes the
--- ones a script names in `@uses` (and those they call) into it, and the build refuses a
--- copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals shown

-- The latch in `latch_hash` as these scripts keep it: { gen, count, left, opened } (the
-- generation, its count, what is left of it, the last generation that opened, 0 for
-- none); nil when there is no latch; nil and an error reply when the hash holds what
-- these scripts never write. Reads only (a key of another type: WRONGTYPE).
local function latch_of(latch_hash)
  local held = redis.call('HMGET', latch_hash, 'gen', 'count', 'left', 'opened')
  local fields = redis.call('HLEN', latch_hash)
  if fields == 0 then
    return nil
  end
  local numbers = {}
  for i = 1, 4 do
    local v = held[i]
    numbers[i] = v and #v <= 16 and (v == '0' or string.match(v, '^[1-9]%d*$')) and tonumber(v)
  end
  local gen, total, left, opened = numbers[1], numbers[2], numbers[3], numbers[4]
  -- Every generation before the current one opened (arm refuses a closed latch), and the
  -- current one is open exactly when nothing is left of its count.
  if not (fields == 4 and gen and total and left and opened and gen >= 1 and gen <= 9007199254740990
      and total >= 1 and total <= 10000 and left <= total
      and opened >= gen - 1 and opened <= gen and (opened == gen) == (left == 0)) then
    return nil, redis.error_reply('BAD_LATCH ' .. shown(latch_hash)
      .. ' holds no latch these scripts wrote (gen, count, left, opened)')
  end
  return { gen = gen, count = total, left = left, opened = opened }
end
