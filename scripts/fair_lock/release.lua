--- Frees the lock if `token` holds it, and rings the bell once when someone waits.
---
--- Beyond the book. The ring wakes the one waiter blocked on the bell the longest: in
--- `fifo` order usually the first in line, which takes the lock; a woken waiter that
--- cannot take it rings again for the next, at most once per waiter. Nobody else wakes.
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @key places zset {<name>}:places   waiting token -> its place's deadline (ms, server clock)
--- @key bell list {<name>}:bell       rung once each time the lock frees while someone waits
--- @arg token string hex:32       the token the lock was taken with
--- @return bool                   whether `token` held the lock
--- @error BAD_ARGS                not 3 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_OWNER               `owner` holds a field these scripts never write, or a value they did not write
--- @uses ring_for_next lock_owner
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and fair_lock/_shared.lua of the scripts folder).
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
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
-- Rings bell `bell_key` (a list) once, unless a ring already waits in it (`rings`, its
-- LLEN, read before the first write): the one waiter blocked on it the longest (BLPOP)
-- wakes and runs its script again, and the others keep blocking. With nobody blocked the
-- ring stays until the next waiter blocks, so a release between a "not yet" and its block
-- is not missed. The bell goes after a minute without a ring.
local function ring_bell(bell_key, rings)
  if rings == 0 then
    redis.call('RPUSH', bell_key, 1)
    redis.call('PEXPIRE', bell_key, 60000)
  end
end
-- The holder in hash `owner_key` (`t` its token, `f` its fencing token; the key's expiry
-- is the lease), read and checked before any write: the token and fence; or, for a lock
-- just freed with waiters, nil, nil and the passes left (`b`, see ring_for_next); nothing
-- when the lock is free; or nil, nil, nil and an error reply when the hash holds what
-- these scripts never write.
local function lock_owner(owner_key)
  local hold = redis.call('HMGET', owner_key, 't', 'f', 'b')
  local fields = redis.call('HLEN', owner_key)
  if fields == 0 then
    return nil
  end
  local t, f, b = hold[1], hold[2], hold[3]
  if fields == 1 and b and safe_integer(b, 0, 1000) then
    return nil, nil, tonumber(b)
  end
  if fields ~= 2 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
-- Wakes one waiter of the free lock in `owner_key` (ring_bell; `rings` as there), and lets up
-- to `passes` woken waiters that cannot take it (not first in line) ring again, so that
-- the one that can wakes even when another was blocked longer. The passes are kept in the
-- owner hash as `b` for a second: a waiter blocks at most that long before it runs its
-- script again anyway.
local function ring_for_next(owner_key, bell_key, rings, passes)
  redis.call('DEL', owner_key)
  redis.call('HSET', owner_key, 'b', math.min(passes, 1000))
  redis.call('PEXPIRE', owner_key, 1000)
  ring_bell(bell_key, rings)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local places = KEYS[2]
local bell = KEYS[3]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(owner, '^(.+):owner$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:owner, got ' .. shown(owner))
end
if places ~= tag_of_keys .. ':places' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:places with <name> as in owner, got ' .. shown(places))
end
if bell ~= tag_of_keys .. ':bell' then
  return redis.error_reply('BAD_KEYS KEYS[3] must be {<name>}:bell with <name> as in owner, got ' .. shown(bell))
end
-- End of the generated input checks.
-- Everything read and checked before the first write (WRONGTYPE included).
local owner_token, _, _, bad_owner = lock_owner(owner)
if bad_owner then
  return bad_owner
end
local waiters = redis.call('ZCARD', places)
local rings = redis.call('LLEN', bell)
if owner_token ~= token then
  return 0
end
if waiters == 0 then
  redis.call('DEL', owner)
else
  ring_for_next(owner, bell, rings, waiters)
end
return 1
