--- Counts the members of the union of several sets, in Redis, without sending them back.
---
--- 《Redis 应用实例》 chapter 7 (`UniqueCounter.union`). The book sends SUNION, so every
--- member travels to the client only to be counted there. Here SUNIONSTORE builds the
--- union in `scratch`, which takes its size and is unlinked again in the same atomic
--- step: no other client ever sees it. A `scratch` key that already exists is refused,
--- so the script never overwrites data. All keys must share one cluster hash slot
--- (derive `scratch` from the first counter's name, as `{name}:union_scratch`). The sets
--- may hold 10,000 members together, so that one call stays short; count bigger ones
--- with a HyperLogLog (`HllUniqueCounter`), whose union costs the same at any size.
--- @key scratch set {<key>}:union_scratch  where the union is built and unlinked again; must not exist
--- @key counters... set 1..=1000 <key>     the sets to unite
--- @return uint                     the number of distinct members in all the sets
--- @error BAD_ARGS                  not from 2 to 1001 keys and 0 arguments
--- @error BAD_KEYS                  a key not named as its template says
--- @error SCRATCH_IN_USE            `scratch` exists; pick a key that holds nothing
--- @error TOO_BIG                   the sets hold more than 10,000 members together
--- @complexity O(N), N = the members of all the sets, at most 10,000
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
if #KEYS < 2 or #KEYS > 1001 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected from 2 to 1001 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local scratch = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(scratch, '^(.+):union_scratch$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<key>}:union_scratch, got ' .. shown(scratch))
end
for i = 2, #KEYS do
  if KEYS[i] == '' then
    return redis.error_reply('BAD_KEYS KEYS[' .. i .. '] must be <key>, got ' .. shown(KEYS[i]))
  end
end
-- End of the generated input checks.
local MAX_MEMBERS = 10000

if redis.call('EXISTS', scratch) == 1 then
  return redis.error_reply('SCRATCH_IN_USE the scratch key exists; it must hold nothing')
end
local total = 0
for i = 2, #KEYS do
  total = total + redis.call('SCARD', KEYS[i])
end
if total > MAX_MEMBERS then
  return redis.error_reply('TOO_BIG the sets hold ' .. total .. ' members together, more than ' .. MAX_MEMBERS
    .. '; count them with a HyperLogLog instead')
end

local count = redis.call('SUNIONSTORE', scratch, unpack(KEYS, 2))
redis.call('UNLINK', scratch)
return count
