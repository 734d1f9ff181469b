--- Helpers of the barrier scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals shown

-- The barrier in `state_hash` as these scripts keep it: { parties, gen } (how many
-- parties release a generation, and the current generation); nil when there is none; nil
-- and an error reply when the hash holds what these scripts never write. Reads only (a
-- key of another type: WRONGTYPE).
local function barrier_of(state_hash)
  local held = redis.call('HMGET', state_hash, 'parties', 'gen')
  local fields = redis.call('HLEN', state_hash)
  if fields == 0 then
    return nil
  end
  local numbers = {}
  for i = 1, 2 do
    local v = held[i]
    numbers[i] = v and #v <= 16 and string.match(v, '^[1-9]%d*$') and tonumber(v)
  end
  local n, gen = numbers[1], numbers[2]
  if not (fields == 2 and n and gen and n <= 10000 and gen <= 1000000000000000) then
    return nil, redis.error_reply('BAD_BARRIER ' .. shown(state_hash)
      .. ' holds no barrier these scripts wrote (parties, gen)')
  end
  return { parties = n, gen = gen }
end

-- The earliest lease deadline of the parties waiting in `arrived_zset` (ms, server
-- clock), nil when none waits. Reads only.
local function earliest_deadline(arrived_zset)
  local first = redis.call('ZRANGE', arrived_zset, 0, 0, 'WITHSCORES')
  return first[2] and tonumber(first[2])
end

-- Ends generation `gen` of the barrier: released, or broken (a party's lease ran out, a
-- party left, a reset). Its outcome goes to `history_zset` (member the generation, score
-- twice it, plus 1 when broken; the last 1000 generations are kept), its parties are
-- let go, and generation gen + 1 begins. The caller then wakes the waiters.
local function end_generation(state_hash, arrived_zset, history_zset, gen, broken)
  redis.call('ZADD', history_zset, 2 * gen + (broken and 1 or 0), gen)
  redis.call('ZREMRANGEBYRANK', history_zset, 0, -1001)
  redis.call('UNLINK', arrived_zset)
  redis.call('HSET', state_hash, 'gen', gen + 1)
end
