#!lua flags=no-writes
--- The latch's generation, count, what is left of it and the last generation that opened; nil when there is none.
---
--- Beyond the books. The current generation is open when nothing is left of its count;
--- a latch nobody armed (or whose keys expired) is nil, never open.
--- @key latch hash {<name>}:latch    the latch: gen, count, left and opened
--- @return (uint, uint, uint, uint)?  the generation, its count, what is left (0: open), and the last generation
---   that opened (0 for none); nil when there is no latch
--- @error BAD_ARGS                   not 1 key and 0 arguments
--- @error BAD_KEYS                   a key not named as its template says
--- @error BAD_LATCH                  `latch` holds a field these scripts never write, or a value they did not write
--- @uses latch_of
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; latch/_shared.lua of the scripts folder).
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
-- The latch in `latch_hash` as these scripts keep it: { gen, count, left, opened } (the
-- generation, its count, what is left of it, the last generation that opened, 0 for
-- none); nil when there is no latch; nil and an error reply when the hash holds what
-- these scripts never write. Reads only (a key of another type: WRONGTYPE).
local function latch_of(latch_hash)
  local held = redis.call('HMGET', latch_hash, 'gen', 'count', 'left', 'opened')
  local fields = redis.call('HLEN', latch_hash)
  if fields == 0 then
    return nil
  end
  local numbers = {}
  for i = 1, 4 do
    local v = held[i]
    numbers[i] = v and #v <= 16 and (v == '0' or string.match(v, '^[1-9]%d*$')) and tonumber(v)
  end
  local gen, total, left, opened = numbers[1], numbers[2], numbers[3], numbers[4]
  -- Every generation before the current one opened (arm refuses a closed latch), and the
  -- current one is open exactly when nothing is left of its count.
  if not (fields == 4 and gen and total and left and opened and gen >= 1 and gen <= 9007199254740990
      and total >= 1 and total <= 10000 and left <= total
      and opened >= gen - 1 and opened <= gen and (opened == gen) == (left == 0)) then
    return nil, redis.error_reply('BAD_LATCH ' .. shown(latch_hash)
      .. ' holds no latch these scripts wrote (gen, count, left, opened)')
  end
  return { gen = gen, count = total, left = left, opened = opened }
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 1 key and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local latch = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(latch, '^(.+):latch$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:latch, got ' .. shown(latch))
end
-- End of the generated input checks.
local state, err = latch_of(latch)
if err then
  return err
end
if not state then
  return false
end
return { state.gen, state.count, state.left, state.opened }
