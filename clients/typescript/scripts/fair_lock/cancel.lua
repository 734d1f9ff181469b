--- Gives up `token`'s place, and wakes the one behind it in line.
---
--- Beyond the book. A waiter that stops waiting (its timeout passed) calls this, so that
--- the waiters behind it need not wait for its place to lapse; one that dies without it
--- loses its place within one `place_lease` all the same. The one just behind it in line
--- blocks on its turn key (`turn`): it is rung, and that waiter calls again and waits
--- behind the next one ahead.
--- @key queue zset {<name>}:queue     waiting token -> ticket, in order of arrival (`fifo` callers)
--- @key places zset {<name>}:places   waiting token -> place deadline (ms, server clock), every waiter
--- @key turn list {<name>}:turn:<token>   rung when `token` frees the lock or its place: the next in line blocks on it
--- @arg token string hex:32       the waiter's token
--- @return bool                   whether the token had a place
--- @error BAD_ARGS                not 3 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @uses ring_bell
--- @complexity O(log N), N = the waiters
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua of the scripts folder).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local queue = KEYS[1]
local places = KEYS[2]
local turn = KEYS[3]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(queue, '^(.+):queue$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:queue, got ' .. shown(queue))
end
if places ~= tag_of_keys .. ':places' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:places with <name> as in queue, got ' .. shown(places))
end
if turn ~= tag_of_keys .. ':turn:' .. token then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<name>}:turn:<token> with <name> as in queue and <token> = ARGV[1], got ' ..
      shown(turn))
end
-- End of the generated input checks.
-- Read before the first write (WRONGTYPE included).
local rings = redis.call('LLEN', turn)
local rank = redis.call('ZRANK', queue, token)
local behind = rank and redis.call('ZRANGE', queue, rank + 1, rank + 1)[1]
if redis.call('ZREM', places, token) == 0 then
  return 0
end
if rank then
  redis.call('ZREM', queue, token)
end
if behind then
  ring_bell(turn, rings, 1, 1000)
end
return 1
