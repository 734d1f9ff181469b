#!lua flags=no-writes
--- Whether generation `generation` of the latch (or its current one) has opened; if not, what to block on.
---
--- Beyond the books. A waiter calls it, and while the answer is "not yet" blocks on
--- `wake` from the id it answers (`XREAD BLOCK <ms> STREAMS <wake> <id>`), then calls it
--- again with the generation it answered. Every generation before the current one has
--- opened (a closed one is never replaced), so a waiter that saw generation g closed
--- learns that g opened even when the latch was re-armed before it asked again. A latch
--- nobody armed (or whose keys expired) never reads open: a waiter with no generation
--- then waits for generation 1, a new latch's first. No pub/sub: a wake-up lost to a
--- failover costs one `ms`, after which the waiter asks again.
--- @key latch hash {<name>}:latch    the latch: gen, count, left and opened
--- @key wake stream {<name>}:wake    the latch's wake stream
--- @arg generation uint? 1..=2^53-2  the generation waited for (an earlier reply's, arm's); empty: the current
--- @return (bool, uint, string?, uint?)  open, and the generation waited for; when not open, the wake stream's
---   last id to block from and the ms to block at most
--- @error BAD_ARGS                   not 2 keys and 1 argument
--- @error BAD_GENERATION             not an integer within its range (or empty)
--- @error BAD_KEYS                   a key not named as its template says
--- @error BAD_LATCH                  `latch` holds a field these scripts never write, or a value they did not write
--- @uses latch_of wake_id
--- @complexity O(1)
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local latch = KEYS[1]
local wake = KEYS[2]
local generation = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if ARGV[1] ~= '' and (not generation or generation > 9007199254740990) then
  return redis.error_reply(
      'BAD_GENERATION must be an integer from 1 to 9007199254740990, or empty, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(latch, '^(.+):latch$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:latch, got ' .. shown(latch))
end
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:wake with <name> as in latch, got ' .. shown(wake))
end
-- End of the generated input checks.
local state, err = latch_of(latch)
if err then
  return err
end
local last = wake_id(wake)
if not state then
  return { 0, generation or 1, last, 1000 }
end
local waited = generation or state.gen
if waited < state.gen or (waited == state.gen and state.left == 0) then
  return { 1, waited, false, false }
end
return { 0, waited, last, 1000 }
