--- Gives up `token`'s place in the queue, and wakes the waiters.
---
--- Beyond the book. A waiter that stops waiting (its timeout passed) calls this, so that
--- the waiters behind it need not wait for its place to lapse; one that dies without it
--- loses its place within one `place_lease` all the same.
--- @key queue zset {<name>}:queue     waiting token -> ticket, in order of arrival
--- @key places zset {<name>}:places   waiting token -> place deadline (ms, server clock)
--- @key wake stream {<name>}:wake     the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the waiter's token
--- @return bool                   whether the token had a place
--- @error BAD_ARGS                not 3 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @uses wake_waiters
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
-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local queue = KEYS[1]
local places = KEYS[2]
local wake = KEYS[3]
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
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply('BAD_KEYS KEYS[3] must be {<name>}:wake with <name> as in queue, got ' .. shown(wake))
end
-- End of the generated input checks.
redis.call('ZCARD', places)
redis.call('XLEN', wake)
if redis.call('ZREM', queue, token) == 0 then
  redis.call('ZREM', places, token)
  return 0
end
redis.call('ZREM', places, token)
wake_waiters(wake)
return 1
