--- Frees the lock if `token` holds it, and wakes the next in line, or one barging waiter.
---
--- Beyond the book. The first in line blocks on the holder's turn key (`turn`), so a
--- release with someone in line rings it once and wakes that one alone; the others stay
--- blocked, each on the turn key of the one ahead of it. While barging waiters wait (more
--- places than tokens in line), it rings the bell once too, which wakes the one of them
--- blocked the longest. A ring nobody was blocked for stays a second (`turn`) or a
--- minute (`bell`), so a waiter that blocks just after still wakes.
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @key queue zset {<name>}:queue     waiting token -> ticket, in order of arrival (`fifo` callers)
--- @key places zset {<name>}:places   waiting token -> place deadline (ms, server clock), every waiter
--- @key bell list {<name>}:bell       rung for the barging waiters: at most one ring
--- @key turn list {<name>}:turn:<token>   rung when `token` frees the lock or its place: the next in line blocks on it
--- @arg token string hex:32       the token the lock was taken with
--- @return bool                   whether `token` held the lock
--- @error BAD_ARGS                not 5 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_OWNER               `owner` holds a field these scripts never write, or a value they did not write
--- @uses ring_bell lock_owner
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
-- Rings bell `bell_key` (a list) until it holds `count` rings (at most 1,000), `rings` (its
-- LLEN, read before the first write) being there already: each ring wakes the one waiter
-- blocked on it the longest (BLPOP), which runs its script again, and the others keep
-- blocking. With nobody blocked a ring stays until the next waiter blocks, so a ring
-- between a "not yet" and its block is not missed, for `ms`: no longer than a waiter
-- blocks before it runs again anyway.
local function ring_bell(bell_key, rings, count, ms)
  local more = {}
  for i = 1, math.min(count, 1000) - rings do
    more[i] = 1
  end
  if #more > 0 then
    redis.call('RPUSH', bell_key, unpack(more))
    redis.call('PEXPIRE', bell_key, ms)
  end
end
-- The holder in hash `owner_key` (`t` its token, `f` its fencing token; the key's expiry
-- is the lease), read and checked before any write: the token and fence, or nothing when
-- the lock is free; or nil, nil and an error reply when the hash holds what these scripts
-- never write.
local function lock_owner(owner_key)
  local all = redis.call('HGETALL', owner_key)
  if #all == 0 then
    return nil
  end
  local hold = {}
  for i = 1, #all, 2 do
    hold[all[i]] = all[i + 1]
  end
  local t, f = hold.t, hold.f
  if #all ~= 4 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local queue = KEYS[2]
local places = KEYS[3]
local bell = KEYS[4]
local turn = KEYS[5]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(owner, '^(.+):owner$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:owner, got ' .. shown(owner))
end
if queue ~= tag_of_keys .. ':queue' or places ~= tag_of_keys .. ':places' or bell ~= tag_of_keys .. ':bell' then
  for i, each in ipairs({ ':queue', ':places', ':bell' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in owner, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
if turn ~= tag_of_keys .. ':turn:' .. token then
  return redis.error_reply(
      'BAD_KEYS KEYS[5] must be {<name>}:turn:<token> with <name> as in owner and <token> = ARGV[1], got ' ..
      shown(turn))
end
-- End of the generated input checks.
-- Everything read and checked before the first write (WRONGTYPE included).
local owner_token, _, bad_owner = lock_owner(owner)
if bad_owner then
  return bad_owner
end
local waiters = redis.call('ZCARD', places)
local in_line = redis.call('ZCARD', queue)
local bell_rings = redis.call('LLEN', bell)
local turn_rings = redis.call('LLEN', turn)
if owner_token ~= token then
  return 0
end
redis.call('DEL', owner)
-- The first in line blocks on this holder's turn key; the barging waiters, on the bell.
if in_line > 0 then
  ring_bell(turn, turn_rings, 1, 1000)
end
if waiters > in_line then
  ring_bell(bell, bell_rings, 1, 60000)
end
return 1
