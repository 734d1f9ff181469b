--- Deletes the lock if, and only if, it is held with `token`.
---
--- The compare-and-delete of 《Redis 应用实例》 chapter 4 in one atomic step. The book's
--- WATCH/GET/MULTI/DEL takes three round trips and gives up (returns false) when another
--- client touches the key in between; this never does.
--- @key lock string <key>        the lock key
--- @arg token string non-empty   the secret the lock was acquired with
--- @return bool                  1 when it was held with `token` and is now free; 0 for another token or a free lock
--- @error BAD_ARGS               not 1 key and 1 argument
--- @error BAD_TOKEN              empty
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
if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 1 key and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local lock = KEYS[1]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if lock == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(lock))
end
-- End of the generated input checks.
if redis.call('GET', lock) == token then
  return redis.call('DEL', lock)
end
return 0
