--- Arms the latch with a new generation of `count` count-downs; refused while one is closed.
---
--- Beyond the books. A countdown latch opens when its count reaches zero, and stays open
--- until it is armed again. Each arm starts a new generation (1 for a new latch, then 2,
--- 3, …), so that a waiter that saw generation g closed still learns that g opened after
--- the latch was re-armed to g + 1 (`wait.lua` answers open for every generation before
--- the current one). That is why a closed generation is never replaced: arming a latch
--- whose count has not reached zero changes nothing and answers false with the closed
--- generation (count it down, or delete the keys, first). Arming clears the ids of the
--- last generation's count-downs. With `ttl`, the latch's keys go `ttl` after this arm
--- (the latch then reads as not found, and its generations start at 1 again); without,
--- they stay.
--- @key latch hash {<name>}:latch  the latch: gen, count, left and opened (the last generation that opened)
--- @key ids any {<name>}:ids       the ids that counted the current generation down, cleared here
--- @arg count uint 1..=10000    how many count-downs open the new generation
--- @arg ttl ms? 1..=10^15-1     how long the latch lives after this arm; empty for ever
--- @return (bool, uint)         armed (false: a closed generation stands), and the generation: the new one, or the
---   closed one that stands
--- @error BAD_ARGS              not 2 keys and 2 arguments
--- @error BAD_COUNT             not an integer within its range
--- @error BAD_TTL               not whole milliseconds within its range (or empty)
--- @error BAD_KEYS              a key not named as its template says
--- @error BAD_LATCH             `latch` holds a field these scripts never write, or a value they did not write
--- @uses latch_of
--- @complexity O(N), N = the ids left of the last generation (none once it opened; at most 10,000)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; latch/_shared.lua of the scripts folder).
-- A bad argument as an error shows it: its first 32 bytes, other than printable ASCII
-- escaped, and its length when it is longer.
local function shown(s)
  local head = string.gsub(string.sub(s, 1, 32), '[^%w%p ]', function(c)
    return string.format('\\%03d', string.byte(c))
  end)
  if #s > 32 then
    return '"' .. head .. '"... (' .. #s .. ' bytes)'
  end
  return '"' .. head .. '"'
end
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local latch = KEYS[1]
local ids = KEYS[2]
local count = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not count or count > 10000 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 10000, got ' .. shown(ARGV[1]))
end
local ttl = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(latch, '^(.+):latch$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:latch, got ' .. shown(latch))
end
if ids ~= tag_of_keys .. ':ids' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:ids with <name> as in latch, got ' .. shown(ids))
end
-- End of the generated input checks.
local state, err = latch_of(latch)
if err then
  return err
end
if state and state.left > 0 then
  return { 0, state.gen }
end
local gen = state and state.gen + 1 or 1
if gen > 9007199254740990 then
  return { 0, state.gen }
end
redis.call('HSET', latch, 'gen', gen, 'count', count, 'left', count, 'opened', state and state.opened or 0)
redis.call('UNLINK', ids)
if ttl then
  redis.call('PEXPIRE', latch, ttl)
else
  redis.call('PERSIST', latch)
end
return { 1, gen }
