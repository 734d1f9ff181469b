--- Adds items to one partition of a Bloom filter: per item, 1 when it was new, 0 when it may be old.
---
--- Beyond the books: a Bloom filter that any language shares by its name and raw bytes.
--- The script hashes each item itself (its SHA-1, as `item_place` below says), and
--- computes the filter's size from `capacity` and `one_in`, so a Python, Node or Rust
--- client needs nothing but this file and the parameters. The parameters are stored with
--- the filter on its first add and checked on every call: a call with others answers
--- BAD_PARAMS and changes nothing, never a wrong answer. A filter larger than one
--- partition is split into `partitions` partitions, each of its own hash tag (partition
--- i of filter `<name>` is named `<name>:<i>`, and `<name>` itself when there is one),
--- so that they spread over a cluster; an item belongs to the partition its SHA-1 names,
--- and every item of a call must belong to `partition`. An item is new when it set at
--- least one bit; the filter counts those in `added` (an estimate of the items added,
--- low by the items that were false positives when they were added).
--- @key params hash {<filter>}:bloom   capacity, one_in, partitions, partition, m, k, added: checked on every call
--- @key bits string {<filter>}:bits     the bitmap of m bits (at most 2^24: 2 MiB)
--- @arg capacity uint 1..=10^10     the items the whole filter is made for
--- @arg one_in uint 2..=10^9        the false-positive rate at `capacity` items: 1 in `one_in`
--- @arg partitions uint 1..=1024    how many partitions the filter has
--- @arg partition uint 0..=1023     which one this is: below `partitions`
--- @arg items bytes... 1..=100      the items to add
--- @return [int]                    per item, in order: 1 when it was new, 0 when it may have been added before
--- @error BAD_ARGS       not 2 keys and from 5 to 104 arguments
--- @error BAD_PARTITION  not an integer within its range, not below `partitions`, or an item of another partition
--- @error BAD_CAPACITY   not an integer within its range, or a partition would need over 2^24 bits: use more
--- @error BAD_ONE_IN     not an integer within its range
--- @error BAD_PARTITIONS not an integer within its range
--- @error BAD_KEYS       a key not named as its template says
--- @error BAD_PARAMS     the filter was made with another capacity, rate or partitioning
--- @error BAD_FILTER     `params` holds a field these scripts never write, or a foreign value (or `bits` does)
--- @error BAD_BITS       `bits` holds something other than a string
--- @uses filter_shape held_filter item_place
--- @complexity O(items × k), k = log2(one_in) ≤ 30
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
-- Where `item` lies in a partition of `of_m` bits, from its SHA-1 as 40 hex digits: its
-- first bit h1 (digits 1-12 as a number, mod m) and its step h2 (digits 13-24, mod m; 1
-- when that is 0), its k bits being h1 + i × h2 mod m for i from 0 to k - 1; third, its
-- partition, digits 25-32 mod `of_partitions` (0, not read, when there is one).
local function item_place(item, of_m, of_partitions)
  local sha = redis.sha1hex(item)
  local step = tonumber(string.sub(sha, 13, 24), 16) % of_m
  if step == 0 then
    step = 1
  end
  local its_partition = 0
  if of_partitions > 1 then
    its_partition = tonumber(string.sub(sha, 25, 32), 16) % of_partitions
  end
  return tonumber(string.sub(sha, 1, 12), 16) % of_m, step, its_partition
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV < 5 or #ARGV > 104 then
  return redis.error_reply('BAD_ARGS expected 2 keys and from 5 to 104 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local params = KEYS[1]
local bits = KEYS[2]
local capacity = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not capacity or capacity > 10000000000 then
  return redis.error_reply('BAD_CAPACITY must be an integer from 1 to 10000000000, got ' .. shown(ARGV[1]))
end
local one_in = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not one_in or one_in < 2 or one_in > 1000000000 then
  return redis.error_reply('BAD_ONE_IN must be an integer from 2 to 1000000000, got ' .. shown(ARGV[2]))
end
local partitions = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not partitions or partitions > 1024 then
  return redis.error_reply('BAD_PARTITIONS must be an integer from 1 to 1024, got ' .. shown(ARGV[3]))
end
local partition = ARGV[4] == '0' and 0 or tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not partition or partition > 1023 then
  return redis.error_reply('BAD_PARTITION must be an integer from 0 to 1023, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(params, '^(.+):bloom$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<filter>}:bloom, got ' .. shown(params))
end
if bits ~= tag_of_keys .. ':bits' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<filter>}:bits with <filter> as in params, got ' .. shown(bits))
end
-- End of the generated input checks.
local m, k = filter_shape(capacity, one_in, partitions)
if partition >= partitions then
  return redis.error_reply('BAD_PARTITION partition ' .. partition .. ' is not below partitions ' .. partitions)
end
if m > 16777216 then
  return redis.error_reply('BAD_CAPACITY a partition of ' .. capacity .. ' items at 1 in ' .. one_in
    .. ' would need ' .. m .. ' bits, more than 2^24: use more partitions')
end
local added, err = held_filter(params, bits, {capacity, one_in, partitions, partition}, m, k)
if err then
  return err
end

-- Every item's place first, so that an item of another partition leaves the filter as it
-- was.
local firsts, steps = {}, {}
for i = 1, #ARGV - 4 do
  local at, step, its_partition = item_place(ARGV[i + 4], m, partitions)
  if its_partition ~= partition then
    return redis.error_reply('BAD_PARTITION item ' .. i .. ' belongs to partition ' .. its_partition
      .. ', not ' .. partition)
  end
  firsts[i], steps[i] = at, step
end

if not added then
  -- The whole bitmap at once: one allocation, rather than a string that grows (and is
  -- copied) a step at a time as bits far into it are set.
  redis.call('SETRANGE', bits, math.ceil(m / 8) - 1, '\0')
  redis.call('HSET', params, 'capacity', capacity, 'one_in', one_in, 'partitions', partitions,
    'partition', partition, 'm', m, 'k', k, 'added', 0)
end
-- A SETBIT per bit, which answers the bit before: an item is new when one of its bits was
-- 0. (One BITFIELD of every bit costs as much per bit, and more Lua.) Each bit as text,
-- by string.format's %d: Redis 7.0 formats a Lua number with %.17g, slower.
local new, fresh, format = {}, 0, string.format
for i = 1, #firsts do
  local at, step, was_new = firsts[i], steps[i], 0
  for _ = 1, k do
    if redis.call('SETBIT', bits, format('%d', at), '1') == 0 then
      was_new = 1
    end
    at = (at + step) % m
  end
  new[i], fresh = was_new, fresh + was_new
end
if fresh > 0 then
  redis.call('HINCRBY', params, 'added', fresh)
end
return new
