--- Frees the lock if `token` holds it, and wakes the first live waiter.
---
--- Beyond the book. The first live waiter in the queue takes it at its next call: the wake
--- stream's entry names its token, so it alone runs its script again, and the others keep
--- blocking (every waiter, when none of the first ten in line is live).
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @key queue zset {<name>}:queue     waiting token -> its ticket: the first live one is woken
--- @key places zset {<name>}:places   waiting token -> its place's deadline (ms, server clock)
--- @key wake stream {<name>}:wake     the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the token the lock was taken with
--- @return bool                   whether `token` held the lock
--- @error BAD_ARGS                not 4 keys and 1 argument
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_OWNER               `owner` holds a field these scripts never write, or a value they did not write
--- @uses wake_waiters wake_one first_live_waiter lock_owner
--- @clock server
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
-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
end
-- Wakes the one waiter holding `waiter_token` (the first in line, when only it can go on):
-- the others read the entry and keep blocking without running their script. As
-- wake_waiters otherwise.
local function wake_one(wake_key, waiter_token)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', waiter_token)
  redis.call('PEXPIRE', wake_key, 60000)
end
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- The first token among the first ten waiting in zset `line_key` (`skip_token` aside, when
-- given) whose place in zset `places_key` (token -> deadline, server clock) is live: the
-- one waiter a release lets through, to wake alone. Then whether the line held anyone
-- among those read. Reads only.
local function first_live_waiter(line_key, places_key, skip_token)
  local heads = redis.call('ZRANGE', line_key, 0, skip_token and 10 or 9)
  if #heads == 0 then
    return nil, false
  end
  local now = now_ms()
  local deadlines = redis.call('ZMSCORE', places_key, unpack(heads))
  for i, head in ipairs(heads) do
    if head ~= skip_token and deadlines[i] and tonumber(deadlines[i]) > now then
      return head, true
    end
  end
  return nil, true
end
-- The holder in hash `owner_key` (`t` its token, `f` its fencing token; the key's expiry
-- is the lease), read and checked before any write: the token and fence, or nothing when
-- the lock is free; or nil, nil and an error reply when the hash holds what these scripts
-- never write.
local function lock_owner(owner_key)
  local hold = redis.call('HMGET', owner_key, 't', 'f')
  local fields = redis.call('HLEN', owner_key)
  if fields == 0 then
    return nil
  end
  local t, f = hold[1], hold[2]
  if fields ~= 2 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, redis.error_reply('BAD_OWNER ' .. shown(owner_key)
      .. ' holds no lock holder (fields t and f)')
  end
  return t, tonumber(f)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local queue = KEYS[2]
local places = KEYS[3]
local wake = KEYS[4]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(owner, '^(.+):owner$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:owner, got ' .. shown(owner))
end
for i, each in ipairs({ ':queue', ':places', ':wake' }) do
  if KEYS[i + 1] ~= tag_of_keys .. each then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in owner, got ' ..
        shown(KEYS[i + 1]))
  end
end
-- End of the generated input checks.
local owner_token, _, bad_owner = lock_owner(owner)
if bad_owner then
  return bad_owner
end
redis.call('XLEN', wake)
redis.call('ZCARD', places)
-- Only the first live waiter can take the lock, so only it is woken (everyone, when none
-- of the first ten in line is live: the next try drops them).
local next_token, waiting = first_live_waiter(queue, places)
if owner_token ~= token then
  return 0
end
redis.call('DEL', owner)
if next_token then
  wake_one(wake, next_token)
elseif waiting then
  wake_waiters(wake)
end
return 1
