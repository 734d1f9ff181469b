--- The targets that have every one of the tags, from a cache built once per miss (`get_cached_target_by_tags`).
---
--- 《Redis 应用实例》 chapter 15 reads the cache, and on a miss rebuilds it in a separate
--- MULTI, so clients that miss at once all compute the intersection; and SINTERSTORE
--- deletes a destination whose result is empty, so an empty answer is never cached and
--- every call for it computes again. Here the read and the build are one step: the first
--- caller of a miss computes, every other one reads its result. The cache set always holds
--- the empty string as a marker, so an empty answer is cached like any other (targets are
--- never empty). The cache key is the caller's: the Rust API names it from the sorted,
--- escaped tags, so that the same tags in any order share one entry. The work of a miss
--- grows with the targets of the rarest tag, times the tags: a miss is refused when the
--- rarest tag has more than 1,500 targets (10 tags of 1,500 take about 2 ms of server
--- time); read such an intersection with SINTER, or cache it in pages of your own.
--- @key cache set {<namespace>}:cached:<tags>  `<tags>`: tags sorted by byte, `%` as `%25`, `,` as `%2C`, joined by `,`
--- @key tag_targets... set 1..=10 {<namespace>}:tag:<tag>  each tag's targets
--- @arg ttl ms 1..=10^15-1    how long the answer stays cached
--- @return (bool, [string])   whether this call computed the answer (a miss); the targets
--- @error BAD_ARGS            not from 2 to 11 keys and 1 argument
--- @error BAD_TTL             not whole milliseconds within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error TOO_BROAD           a miss, and the rarest tag has more than 1,500 targets
--- @complexity hit: O(R), R = the targets; miss: O(N × M), N = the rarest tag's targets (at most 1,500), M = the tags
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
-- What key name `s` holds between `head` and `tail`, when it is `head`, at least one byte,
-- then `tail`; else nil.
local function key_cut(s, head, tail)
  local stop = #s - #tail
  if stop > #head and string.sub(s, 1, #head) == head and string.sub(s, stop + 1) == tail then
    return string.sub(s, #head + 1, stop)
  end
end
-- Reads key name `s` as texts[1], a value, texts[2], a value, ..., texts[#texts]: each value
-- at least one byte and as short as it can be, a first value that is a hash tag group
-- (`group` true) up to the `}` of its hash tag at least. Returns the values, or nil when `s`
-- is not of that form.
local function key_split(s, texts, group)
  if string.sub(s, 1, #texts[1]) ~= texts[1] then
    return nil
  end
  local values, at = {}, #texts[1] + 1
  for n = 2, #texts do
    local least = at
    if n == 2 and group then
      local open = string.find(s, '{', at, true)
      least = open and string.find(s, '}', open + 1, true)
      if not least or least == open + 1 then
        return nil
      end
    end
    local stop = #s - #texts[n]
    if n < #texts then
      stop = (string.find(s, texts[n], least + 1, true) or 0) - 1
    end
    if stop < least or string.sub(s, stop + 1, stop + #texts[n]) ~= texts[n] then
      return nil
    end
    values[n - 1] = string.sub(s, at, stop)
    at = stop + #texts[n] + 1
  end
  return values
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 2 or #KEYS > 11 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected from 2 to 11 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local cache = KEYS[1]
local ttl = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local cache_parts = key_split(cache, { '', ':cached:', '' }, true)
if not cache_parts then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:cached:<tags>, got ' .. shown(cache))
end
local tag_of_keys = cache_parts[1]
for i = 2, #KEYS do
  if not key_cut(KEYS[i], tag_of_keys .. ':tag:', '') then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i .. '] must be {<namespace>}:tag:<tag> with <namespace> as in cache, got ' ..
        shown(KEYS[i]))
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('SCARD', cache)
local rarest = math.huge
for i = 2, #KEYS do
  rarest = math.min(rarest, redis.call('SCARD', KEYS[i]))
end
local computed = 0
if redis.call('EXISTS', cache) == 0 then
  if rarest > 1500 then
    return redis.error_reply('TOO_BROAD the rarest of these tags has ' .. rarest
      .. ' targets, over 1500: read the intersection with SINTER instead')
  end
  computed = 1
  redis.call('SINTERSTORE', cache, unpack(KEYS, 2))
  redis.call('SADD', cache, '')
  redis.call('PEXPIRE', cache, ttl)
end
local targets = {}
for _, member in ipairs(redis.call('SMEMBERS', cache)) do
  if member ~= '' then
    targets[#targets + 1] = member
  end
end
return { computed, targets }
