--- Counts the latch down by one, at most once per `id` in a generation; the last count-down opens it.
---
--- Beyond the books. The count-down that takes the count to zero opens the generation
--- (`opened` becomes it) and wakes every waiter (an entry on `wake`). A count-down with an
--- `id` counts only the first time that id counts the generation down, so a client that
--- resends it after a lost reply counts once; the ids are kept until the generation opens
--- (at most `count` of them). With `generation`, it counts only while that generation is
--- the latch's, so a slow client never counts down the next one. A latch nobody armed is
--- left as it is (nil): no count-down is stored ahead of an arm.
--- @key latch hash {<name>}:latch    the latch: gen, count, left and opened
--- @key ids set {<name>}:ids         the ids that counted the current generation down
--- @key wake stream {<name>}:wake    the latch's wake stream: an entry when a generation opens
--- @arg id string len:0..=256        who counts down (a worker's name, a task id); empty for no id
--- @arg generation uint? 1..=2^53-2  count only while this generation is the latch's; empty for any
--- @return (uint, uint, bool)?       the latch's generation, what is left of its count (0: open), and whether
---   this call counted; nil when there is no latch
--- @error BAD_ARGS                   not 3 keys and 2 arguments
--- @error BAD_ID                     not from 0 to 256 bytes long
--- @error BAD_GENERATION             not an integer within its range (or empty)
--- @error BAD_KEYS                   a key not named as its template says
--- @error BAD_LATCH                  `latch` holds a field these scripts never write, or a value they did not write
--- @uses latch_of wake_id wake_waiters
--- @complexity O(1); the opening count-down O(N), N = the ids it frees (fewer than `count`, 10,000)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and latch/_shared.lua of the scripts folder).
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
if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local latch = KEYS[1]
local ids = KEYS[2]
local wake = KEYS[3]
local id = ARGV[1]
if #id < 0 or #id > 256 then
  return redis.error_reply('BAD_ID must be from 0 to 256 bytes long, got ' .. #id .. ' bytes')
end
local generation = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not generation or generation > 9007199254740990) then
  return redis.error_reply(
      'BAD_GENERATION must be an integer from 1 to 9007199254740990, or empty, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(latch, '^(.+):latch$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:latch, got ' .. shown(latch))
end
if ids ~= tag_of_keys .. ':ids' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:ids with <name> as in latch, got ' .. shown(ids))
end
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply('BAD_KEYS KEYS[3] must be {<name>}:wake with <name> as in latch, got ' .. shown(wake))
end
-- End of the generated input checks.
local state, err = latch_of(latch)
if err then
  return err
end
local seen = redis.call('SISMEMBER', ids, id) == 1 and id ~= ''
wake_id(wake)
if not state then
  return false
end
if state.left == 0 or seen or (generation and generation ~= state.gen) then
  return { state.gen, state.left, 0 }
end
local left = state.left - 1
if left == 0 then
  redis.call('HSET', latch, 'left', 0, 'opened', state.gen)
  redis.call('UNLINK', ids)
  wake_waiters(wake)
else
  redis.call('HSET', latch, 'left', left)
  if id ~= '' then
    redis.call('SADD', ids, id)
    local ttl = redis.call('PTTL', latch)
    if ttl > 0 then
      redis.call('PEXPIRE', ids, ttl)
    end
  end
end
return { state.gen, left, 1 }
