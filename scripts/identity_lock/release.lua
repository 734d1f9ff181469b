--- Deletes the lock if, and only if, it is held with `token`.
---
--- The compare-and-delete of 《Redis 应用实例》 chapter 4 in one atomic step. The book's
--- WATCH/GET/MULTI/DEL takes three round trips and gives up (returns false) when another
--- client touches the key in between; this never does.
--- @key lock           the lock key
--- @arg token string   the secret the lock was acquired with
--- @return bool        1 when the lock was held with `token` and is now free; 0 for another token or a free lock
--- @error BAD_TOKEN    `token` is empty
--- @complexity O(1)
local lock = KEYS[1]
local token = ARGV[1]

if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end

if redis.call('GET', lock) == token then
  return redis.call('DEL', lock)
end
return 0
