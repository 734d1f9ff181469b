--- Helpers of the geo scripts, each defined here once. `redis-patterns fix` pastes the
--- ones a script names in `@uses` (and those they call) into it, and the build refuses a
--- copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals.
-- luacheck: ignore 211

-- Whether `who` is pinned in `places_set` and its pin has not expired by `now`.
local function live(places_set, deadlines_set, who, now)
  if not redis.call('ZSCORE', places_set, who) then
    return false
  end
  local deadline = redis.call('ZSCORE', deadlines_set, who)
  return not deadline or tonumber(deadline) > now
end

-- The members within `km` of `from`, nearest first, as a flat list of member and
-- distance: at most `most`, leaving out `from` and pins expired by `now`. Asks for as
-- many more as pins have expired, so that neither takes one of the `most` places.
local function nearest(places_set, deadlines_set, from, km, most, now)
  local expired = redis.call('ZCOUNT', deadlines_set, '-inf', now)
  local found = redis.call('GEOSEARCH', places_set, 'FROMMEMBER', from, 'BYRADIUS', km, 'km',
    'ASC', 'COUNT', most + 1 + expired, 'WITHDIST')
  local out = {}
  for _, hit in ipairs(found) do
    if #out >= 2 * most then
      break
    end
    local who = hit[1]
    local deadline = redis.call('ZSCORE', deadlines_set, who)
    if who ~= from and (not deadline or tonumber(deadline) > now) then
      out[#out + 1] = who
      out[#out + 1] = hit[2]
    end
  end
  return out
end
