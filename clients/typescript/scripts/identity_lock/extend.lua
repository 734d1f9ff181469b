--- Sets the lock's lease to `ttl` from now if, and only if, it is held with `token`.
---
--- Beyond the book: a holder whose work runs longer than planned renews its lease, and a
--- client whose lease already ran out (and whose lock may now belong to someone else) is
--- told so instead of extending another holder's lock. A lock acquired without a lease
--- gets one.
--- @key lock string <key>        the lock key
--- @arg token string non-empty   the secret the lock was acquired with
--- @arg ttl ms 1..=10^15-1       the new lease
--- @return bool                  1 when the lease was set; 0 for another token or a free lock
--- @error BAD_ARGS               not 1 key and 2 arguments
--- @error BAD_TOKEN              empty
--- @error BAD_TTL                not whole milliseconds within its range
--- @error BAD_KEYS               a key not named as its template says
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local lock = KEYS[1]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local ttl = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if lock == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(lock))
end
-- End of the generated input checks.
if redis.call('GET', lock) == token then
  return redis.call('PEXPIRE', lock, ttl)
end
return 0
