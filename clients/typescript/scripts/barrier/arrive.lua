--- Arrives at the barrier under `token`, or renews the lease of a party waiting there; the last party releases all.
---
--- Beyond the books: a cyclic barrier, as `java.util.concurrent.CyclicBarrier`, whose
--- parties may crash. A party arrives with a fresh token and a lease (server clock), and
--- waits in the current generation; the `parties`-th arrival releases the generation
--- (every waiter then answers released) and the next generation begins. A waiting party
--- runs this again, with the generation it joined, at least every `ms` it was answered:
--- each run renews its lease and answers released, broken or still waiting. When a
--- waiting party's lease runs out before the release (it crashed, or stopped renewing),
--- the generation **breaks**: the first call to see it (any party's) ends it, every waiter
--- of it answers broken, and the next generation begins at once (Java keeps a broken
--- barrier broken until a reset; here no crashed party is left to reset it). A party
--- that gives up calls `leave.lua`, which breaks the generation too, as a timeout does in
--- Java. `ms` is the time to the earliest lease that could break the generation, or half
--- the caller's lease, whichever is less: waiting parties renew themselves in time. Each
--- party sends `parties`; the first arrival stores it, and a call with another number is
--- refused. The outcomes of the last 1000 generations are kept in `history`, so a waiter
--- learns its generation's outcome after later generations ended (an older one answers
--- broken: its outcome is forgotten). Ended generations append to `wake`, which wakes
--- every waiter at once; none depends on it.
--- @key state hash {<name>}:barrier     the barrier: parties and gen (the current generation)
--- @key arrived zset {<name>}:arrived   the parties waiting in the current generation: token -> lease deadline (ms)
--- @key history zset {<name>}:history   ended generations: member the generation, score 2 × it (+ 1 if broken)
--- @key wake stream {<name>}:wake       the barrier's wake stream: an entry when a generation ends
--- @arg token string hex:32             the party's secret: 128 random bits as 32 hex digits, fresh per party
--- @arg parties uint 1..=10000          how many parties release a generation
--- @arg lease ms 1..=10^15-1            how long the party stays without running this again
--- @arg generation uint? 1..=10^15       the generation the party joined (from an earlier reply); empty to arrive
--- @return (string, uint, string?, uint?)  'released', 'broken' or 'waiting', and the generation; when waiting,
---   the wake stream's last id to block from and the ms to block at most
--- @error BAD_ARGS                      not 4 keys and 4 arguments
--- @error BAD_TOKEN                     not 32 hex digits
--- @error BAD_PARTIES                   not an integer within its range, or not the parties the barrier has
--- @error BAD_LEASE                     not whole milliseconds within its range
--- @error BAD_GENERATION                not an integer within its range (or empty)
--- @error BAD_KEYS                      a key not named as its template says
--- @error BAD_BARRIER                   `state` holds a field these scripts never write, or a value they did not write
--- @error BAD_HISTORY                   `history` holds a generation these scripts did not write
--- @uses barrier_of earliest_deadline end_generation wake_id wake_waiters shown
--- @clock server
--- @complexity O(log N), N = `parties`; O(N) for the call that ends a generation, which frees its parties
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local state = KEYS[1]
local arrived = KEYS[2]
local history = KEYS[3]
local wake = KEYS[4]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local parties = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not parties or parties > 10000 then
  return redis.error_reply('BAD_PARTIES must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
local lease = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
local generation = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if ARGV[4] ~= '' and (not generation or generation > 1000000000000000) then
  return redis.error_reply(
      'BAD_GENERATION must be an integer from 1 to 1000000000000000, or empty, got ' .. shown(ARGV[4]))
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
if barrier and barrier.parties ~= parties then
  return redis.error_reply('BAD_PARTIES the barrier has ' .. barrier.parties .. ' parties, not ' .. parties)
end
-- Reads that fail with WRONGTYPE before anything is written, whatever the answer.
local mine = redis.call('ZSCORE', arrived, token)
redis.call('ZCARD', history)
wake_id(wake)
-- A generation the caller joined that has ended: its outcome, from history.
if generation and barrier and generation < barrier.gen then
  local score = redis.call('ZSCORE', history, generation)
  if not score then
    return { 'broken', generation, false, false }
  end
  score = tonumber(score)
  if score ~= 2 * generation and score ~= 2 * generation + 1 then
    return redis.error_reply('BAD_HISTORY history holds ' .. generation .. ' at ' .. shown(tostring(score))
      .. ', not an outcome these scripts wrote')
  end
  return { score == 2 * generation and 'released' or 'broken', generation, false, false }
end
-- A generation the barrier never had (its keys were deleted): it ends broken.
if generation and (not barrier or generation > barrier.gen) then
  return { 'broken', generation, false, false }
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local gen = barrier and barrier.gen or 1
if not barrier then
  redis.call('HSET', state, 'parties', parties, 'gen', gen)
end
-- A waiting party's lease ran out before the release: the generation breaks.
local first = earliest_deadline(arrived)
if first and first <= now then
  end_generation(state, arrived, history, gen, true)
  wake_waiters(wake)
  if mine or generation == gen then
    return { 'broken', gen, false, false }
  end
  if gen + 1 > 1000000000000000 then
    return { 'broken', gen, false, false }
  end
  gen = gen + 1
end
redis.call('ZADD', arrived, now + lease, token)
if redis.call('ZCARD', arrived) >= parties then
  end_generation(state, arrived, history, gen, false)
  wake_waiters(wake)
  return { 'released', gen, false, false }
end
local ms = math.max(1, math.min(math.floor(lease / 2), earliest_deadline(arrived) - now + 1))
return { 'waiting', gen, wake_id(wake), ms }
