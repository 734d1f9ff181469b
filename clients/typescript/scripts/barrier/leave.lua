--- Takes the party `token` out of the barrier's current generation, which breaks it; nil when it was not waiting.
---
--- Beyond the books. A party that stops waiting (it timed out, or gives up) leaves, and
--- the generation it waited in breaks, as `CyclicBarrier.await` with a timeout breaks it
--- in Java: every other waiter answers broken on its next run (woken through `wake`), and
--- the next generation begins. A party that was not waiting (released, broken, or never
--- there) changes nothing.
--- @key state hash {<name>}:barrier     the barrier: parties and gen
--- @key arrived zset {<name>}:arrived   the parties waiting in the current generation
--- @key history zset {<name>}:history   ended generations and their outcomes
--- @key wake stream {<name>}:wake       the barrier's wake stream
--- @arg token string hex:32             the party's secret
--- @return uint?                        the generation it broke; nil when the party was not waiting
--- @error BAD_ARGS                      not 4 keys and 1 argument
--- @error BAD_TOKEN                     not 32 hex digits
--- @error BAD_KEYS                      a key not named as its template says
--- @error BAD_BARRIER                   `state` holds a field these scripts never write, or a value they did not write
--- @uses barrier_of end_generation wake_id wake_waiters
--- @complexity O(N), N = the waiting parties, freed with the generation it breaks
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and barrier/_shared.lua of the scripts folder).
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
-- The last id of wake stream `wake_key`, '0-0' when it has none. A script that answers
-- "not yet" returns it, and the waiter blocks with XREAD from it until wake_waiters adds
-- an entry. Reads only: call it before the first write (a key of another type is
-- refused with WRONGTYPE there).
local function wake_id(wake_key)
  local last = redis.call('XREVRANGE', wake_key, '+', '-', 'COUNT', 1)[1]
  return last and last[1] or '0-0'
end
-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local arrived = KEYS[2]
local history = KEYS[3]
local wake = KEYS[4]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(state, '^(.+):barrier$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:barrier, got ' .. shown(state))
end
if arrived ~= tag_of_keys .. ':arrived' or history ~= tag_of_keys .. ':history' or wake ~= tag_of_keys .. ':wake' then
  for i, each in ipairs({ ':arrived', ':history', ':wake' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in state, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
local barrier, err = barrier_of(state)
if err then
  return err
end
local mine = redis.call('ZSCORE', arrived, token)
redis.call('ZCARD', history)
wake_id(wake)
if not (barrier and mine) then
  return false
end
end_generation(state, arrived, history, barrier.gen, true)
wake_waiters(wake)
return barrier.gen
