--- Sets the lock's lease to `ttl` from now if, and only if, it is held with `token`.
---
--- Beyond the book: a holder whose work runs longer than planned renews its lease, and a
--- client whose lease already ran out (and whose lock may now belong to someone else) is
--- told so instead of extending another holder's lock. A lock acquired without a lease
--- gets one.
--- @key lock           the lock key
--- @arg token string   the secret the lock was acquired with
--- @arg ttl ms         the new lease in milliseconds, from 1 to 10^15 - 1
--- @return bool        1 when the lease was set; 0 for another token or a free lock
--- @error BAD_TOKEN    `token` is empty
--- @error BAD_TTL      `ttl` is not a whole number of milliseconds from 1 to 10^15 - 1
--- @complexity O(1)
local lock = KEYS[1]
local token = ARGV[1]
local ttl = ARGV[2]

if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
-- Digits only (tonumber() would take '1e3' and '0x10'), and few enough that Redis
-- accepts the expiry: validated here because nothing may be written before it fails.
if not string.match(ttl, '^%d+$') or not string.match(ttl, '[1-9]') or #ttl > 15 then
  return redis.error_reply('BAD_TTL ttl must be whole milliseconds from 1 to 10^15 - 1, got "' .. ttl .. '"')
end

if redis.call('GET', lock) == token then
  return redis.call('PEXPIRE', lock, ttl)
end
return 0
