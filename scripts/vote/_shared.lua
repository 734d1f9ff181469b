--- Helpers of the vote scripts, each defined here once. `redis-patterns fix` pastes the
--- ones a script names in `@uses` (and those they call) into it, and the build refuses a
--- copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211

-- The two rankings of subject `id`, from its votes now and its posting time (ms).
local function rank(up_set, down_set, hot_set, best_set, id, posted_ms)
  local ups, downs = redis.call('SCARD', up_set), redis.call('SCARD', down_set)
  -- reddit's "hot": the order of magnitude of the net score, plus 1 for every 12.5 hours
  -- since 2005-12-08 07:46:43 UTC, so newer subjects rise above older ones.
  local net = ups - downs
  local sign = net > 0 and 1 or (net < 0 and -1 or 0)
  local hot = sign * math.log10(math.max(math.abs(net), 1)) + (posted_ms / 1000 - 1134028003) / 45000
  -- The lower bound of the Wilson score interval (95%, z = 1.96) of the share of up votes.
  local n, z = ups + downs, 1.96
  local wilson = 0
  if n > 0 then
    local p = ups / n
    wilson = (p + z * z / (2 * n) - z * math.sqrt((p * (1 - p) + z * z / (4 * n)) / n)) / (1 + z * z / n)
  end
  redis.call('ZADD', hot_set, string.format('%.17g', hot), id)
  redis.call('ZADD', best_set, string.format('%.17g', wilson), id)
end
