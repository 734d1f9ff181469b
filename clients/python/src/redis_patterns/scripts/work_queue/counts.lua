#!lua flags=no-writes
--- Counts the jobs in each state, at one instant.
---
--- Beyond the books, for operators and dashboards. A leased job whose lease ran out
--- counts as leased until a `take.lua` call hands it back.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @return (uint, uint, uint, uint, uint, uint, uint)  waiting, parked, delayed, leased, dead, completed (kept),
---                               blocked (flow parents waiting for their children)
--- @error BAD_ARGS               not 7 keys and 0 arguments
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
if #KEYS ~= 7 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 7 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local completed = KEYS[6]
local blocked = KEYS[7]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or leased ~= tag_of_keys .. ':leased' or dead ~= tag_of_keys .. ':dead' or
    parked ~= tag_of_keys .. ':parked' or completed ~= tag_of_keys .. ':completed' or
    blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':leased', ':dead', ':parked', ':completed', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
return {
  redis.call('ZCARD', waiting),
  redis.call('ZCARD', parked),
  redis.call('ZCARD', delayed),
  redis.call('ZCARD', leased),
  redis.call('ZCARD', dead),
  redis.call('ZCARD', completed),
  redis.call('ZCARD', blocked),
}
