--- Gives up `token`'s place as a waiting writer, so that readers it held back come in.
---
--- Beyond the book. A writer that stops waiting (its timeout passed) calls this; one that
--- dies without it loses its place when the place's lease passes. Withdrawing a place
--- wakes the waiters.
--- @key intents zset {<name>}:intents     waiting writer token -> place deadline (ms, server clock)
--- @key wake stream {<name>}:wake         the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the waiting writer's token
--- @return bool                   whether the token had a place
--- @error BAD_ARGS                not 2 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @uses wake_waiters
--- @complexity O(log W), W = the waiting writers
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local intents = KEYS[1]
local wake = KEYS[2]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(intents, '^(.+):intents$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:intents, got ' .. shown(intents))
end
if wake ~= tag_of_keys .. ':wake' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:wake with <name> as in intents, got ' .. shown(wake))
end
-- End of the generated input checks.
redis.call('XLEN', wake)
if redis.call('ZREM', intents, token) == 0 then
  return 0
end
wake_waiters(wake)
return 1
