#!lua flags=no-writes
--- The barrier's parties, current generation, the parties waiting in it and how many of those leases ran out.
---
--- Beyond the books. A party whose lease ran out still counts as waiting until a call
--- breaks the generation (the next `arrive`, `leave` or `reset`, whoever calls it).
--- @key state hash {<name>}:barrier     the barrier: parties and gen
--- @key arrived zset {<name>}:arrived   the parties waiting in the current generation
--- @return (uint, uint, uint, uint)?    the parties, the current generation, the parties waiting in it, and how
---   many of those leases ran out; nil when there is no barrier
--- @error BAD_ARGS                      not 2 keys and 0 arguments
--- @error BAD_KEYS                      a key not named as its template says
--- @error BAD_BARRIER                   `state` holds a field these scripts never write, or a value they did not write
--- @uses barrier_of
--- @clock server
--- @complexity O(log N), N = the waiting parties
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; barrier/_shared.lua of the scripts folder).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local arrived = KEYS[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):barrier$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:barrier, got ' .. shown(state))
end
if arrived ~= tag_of_keys .. ':arrived' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:arrived with <name> as in state, got ' .. shown(arrived))
end
-- End of the generated input checks.
local barrier, err = barrier_of(state)
if err then
  return err
end
local waiting = redis.call('ZCARD', arrived)
if not barrier then
  return false
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
return { barrier.parties, barrier.gen, waiting, redis.call('ZCOUNT', arrived, '-inf', now) }
