#!lua flags=no-writes
--- Reads one partition's parameters, shape and count of items added, or nil when it does not exist.
---
--- Beyond the books: `added` is how many items were new when added to this partition
--- (see `add.lua`); the filter's estimate of its items is the sum over its partitions.
--- Nil when the partition does not exist yet. Checked as `add.lua` checks it, against
--- the shape the stored parameters give.
--- @key params hash {<filter>}:bloom   capacity, one_in, partitions, partition, m, k, added: checked on every call
--- @key bits string {<filter>}:bits     the bitmap of m bits (at most 2^24: 2 MiB)
--- @return (uint, uint, uint, uint, uint, uint, uint)?  capacity, one_in, partitions, partition, m bits, k hashes,
---   items added; nil when the partition does not exist
--- @error BAD_ARGS       not 2 keys and 0 arguments
--- @error BAD_KEYS       a key not named as its template says
--- @error BAD_FILTER     `params` holds a field these scripts never write, or a foreign value (or `bits` does)
--- @error BAD_BITS       `bits` holds something other than a string
--- @error BAD_PARAMS     not raised here: the shared check compares the stored parameters with themselves
--- @error BAD_PARTITION  `params` holds a partition not below its partitions
--- @uses filter_shape held_filter safe_integer shown
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; bloom/_shared.lua of the scripts folder).
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
-- The shape of one partition of a filter for `of_capacity` items at a false-positive rate
-- of 1 in `of_one_in`, split into `of_partitions`: its number of hashes k (log2(one_in),
-- rounded, at least 1) and its bits m, the fewest with which k hashes of `of_capacity`
-- items give that rate, (1 - e^(-k × capacity / m))^k <= 1 / one_in, so
-- m = ceil(-k × capacity / ln(1 - one_in^(-1/k))), divided evenly, rounded up.
local function filter_shape(of_capacity, of_one_in, of_partitions)
  local hashes = math.max(1, math.floor(math.log(of_one_in) / math.log(2) + 0.5))
  local total = math.ceil(-hashes * of_capacity / math.log(1 - of_one_in ^ (-1 / hashes)))
  return math.ceil(total / of_partitions), hashes
end
-- The filter as `params_key` and `bits_key` hold it, checked against the call's
-- parameters `want` ({capacity, one_in, partitions, partition}) and the shape they give
-- (`want_m` bits, `want_k` hashes) before anything is written: the number of items added so far (nil when
-- the filter does not exist yet), or nil and an error reply.
local function held_filter(params_key, bits_key, want, want_m, want_k)
  local kind = redis.call('TYPE', bits_key).ok
  if kind ~= 'none' and kind ~= 'string' then
    return nil, redis.error_reply('BAD_BITS ' .. shown(bits_key) .. ' holds a ' .. kind .. ', not a bitmap')
  end
  local held = redis.call('HMGET', params_key, 'capacity', 'one_in', 'partitions', 'partition', 'm', 'k', 'added')
  if not held[1] then
    if redis.call('EXISTS', params_key) == 1 or kind == 'string' then
      return nil, redis.error_reply('BAD_FILTER ' .. shown(params_key)
        .. ' is no filter of these scripts (its parameters or its bits are missing)')
    end
    return nil
  end
  for i = 1, 7 do
    if not held[i] or not safe_integer(held[i], 0, 9007199254740991) then
      return nil, redis.error_reply('BAD_FILTER ' .. shown(params_key) .. ' holds a field that is no whole number')
    end
  end
  if redis.call('HLEN', params_key) ~= 7 then
    return nil, redis.error_reply('BAD_FILTER ' .. shown(params_key) .. ' holds a field these scripts never write')
  end
  for i = 1, 4 do
    if tonumber(held[i]) ~= want[i] then
      return nil, redis.error_reply('BAD_PARAMS the filter was made for ' .. held[1] .. ' items at 1 in '
        .. held[2] .. ', partition ' .. held[4] .. ' of ' .. held[3] .. '; this call says ' .. want[1]
        .. ' items at 1 in ' .. want[2] .. ', partition ' .. want[4] .. ' of ' .. want[3])
    end
  end
  if tonumber(held[5]) ~= want_m or tonumber(held[6]) ~= want_k
      or redis.call('STRLEN', bits_key) > math.ceil(want_m / 8) then
    return nil, redis.error_reply('BAD_FILTER ' .. shown(params_key) .. ' holds a shape these scripts did not write')
  end
  return tonumber(held[7])
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local params = KEYS[1]
local bits = KEYS[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(params, '^(.+):bloom$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<filter>}:bloom, got ' .. shown(params))
end
if bits ~= tag_of_keys .. ':bits' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<filter>}:bits with <filter> as in params, got ' .. shown(bits))
end
-- End of the generated input checks.
local held = redis.call('HMGET', params, 'capacity', 'one_in', 'partitions', 'partition')
if not held[1] then
  local _, err = held_filter(params, bits, {}, 0, 0)
  return err or false
end
local shape = {}
for i = 1, 4 do
  shape[i] = safe_integer(held[i] or '', 0, 10000000000)
  if not shape[i] then
    return redis.error_reply('BAD_FILTER ' .. shown(params) .. ' holds a field that is no whole number')
  end
end
local capacity, one_in, partitions, partition = unpack(shape)
if capacity < 1 or one_in < 2 or partitions < 1 or partitions > 1024 then
  return redis.error_reply('BAD_FILTER ' .. shown(params) .. ' holds parameters out of their ranges')
end
if partition >= partitions then
  return redis.error_reply('BAD_PARTITION ' .. shown(params) .. ' holds partition ' .. partition .. ' of '
    .. partitions)
end
local m, k = filter_shape(capacity, one_in, partitions)
local added, err = held_filter(params, bits, shape, m, k)
if err then
  return err
end
return {capacity, one_in, partitions, partition, m, k, added}
