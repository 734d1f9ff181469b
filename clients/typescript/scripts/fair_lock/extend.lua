--- Runs the lock's lease `lease` from now if `token` holds it.
---
--- Beyond the book. A lease that has passed is not brought back: the holder lost the lock
--- (take it again, and use the new fencing token).
--- @key owner hash {<name>}:owner     the holder: `t` token, `f` fencing token; expires with its lease
--- @arg token string hex:32       the token the lock was taken with
--- @arg lease ms 1..=10^15-1      how long the lock lasts from now
--- @return bool                   whether `token` held the lock
--- @error BAD_ARGS                not 1 key and 2 arguments
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_LEASE               not whole milliseconds within its range
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_OWNER               `owner` holds a field these scripts never write, or a value they did not write
--- @uses lock_owner
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; fair_lock/_shared.lua of the scripts folder).
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local owner = KEYS[1]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(owner, '^(.+):owner$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:owner, got ' .. shown(owner))
end
-- End of the generated input checks.
local owner_token, _, bad_owner = lock_owner(owner)
if bad_owner then
  return bad_owner
end
if owner_token ~= token then
  return 0
end
redis.call('PEXPIRE', owner, lease)
return 1
