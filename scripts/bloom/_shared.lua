--- Helpers of the bloom scripts, each defined here once. `redis-patterns fix` pastes the
--- ones a script names in `@uses` into it, and the build refuses a copy that differs from
--- this file. Keys come in as parameters, named apart from the scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

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
