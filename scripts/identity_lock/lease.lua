#!lua flags=no-writes
--- Returns how long the lock stays held with `token`.
---
--- Its lease in milliseconds, -1 when it is held with no lease, or nil when it is free or
--- held with another token. Beyond the book. GET and PTTL in one step, so the answer is about one holder; it
--- writes nothing and runs with EVALSHA_RO, also on replicas.
--- @key lock           the lock key
--- @arg token string   the secret the lock was acquired with
--- @return int?        milliseconds left; -1 when held with no lease; nil when not held with `token`
--- @error BAD_TOKEN    `token` is empty
--- @complexity O(1)
local lock = KEYS[1]
local token = ARGV[1]

if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end

if redis.call('GET', lock) ~= token then
  return false
end
return redis.call('PTTL', lock)
