--- Feeds a content into the table of each of its prefixes, in one step (the book's `feed`, `set` and `feedex`).
---
--- 《Redis 应用实例》 chapter 16: each prefix of a content ("a", "ab", "abc", cut by
--- characters, not bytes) has a sorted set of contents by weight, and `hint` reads the
--- table of what the user has typed. `incr` adds `weight` (the book's `feed`), `set`
--- replaces it (the book's `set`); with `ttl`, each table expires that long after its
--- last feed (the book's `feedex`: cold prefixes disappear). Beyond the book, `cap` keeps
--- each table to its heaviest entries: the lightest beyond it are dropped (at most 100
--- per table per call), so the memory of a table is bounded whatever is fed.
--- @key tables... zset 1..=64 {<subject>}:<prefix>  the content's prefix tables, shortest first (at most 64 characters)
--- @arg content string non-empty   the content to suggest
--- @arg weight float          what to add (`incr`) or set (`set`)
--- @arg mode string incr|set  add to the weight, or set it
--- @arg ttl ms? 1..=10^15-1   how long each table lives after this feed; empty for ever
--- @arg cap uint? 1..=1000000   the most entries a table keeps; empty for no cap
--- @return nil                nothing
--- @error BAD_ARGS            not from 1 to 64 keys and 5 arguments
--- @error BAD_CONTENT         empty
--- @error BAD_WEIGHT          not a finite decimal number
--- @error BAD_MODE            not one of its choices
--- @error BAD_TTL             not whole milliseconds within its range (or empty)
--- @error BAD_CAP             not an integer within its range (or empty)
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(P (log T + D)), P = the prefixes, T = a table's entries, D = entries dropped (at most 100 per table)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
-- The one rule for floats: decimal digits with an optional leading '-', then an optional
-- fraction and an optional exponent (`e` or `E`, an optional sign, digits), as Python,
-- JavaScript, Java, Go and C print floats (1e+16, 1e-07, 1.0E16); no leading zero, '+'
-- before the number, space, hex, inf or nan.
local function float(s)
  local whole, fraction, exponent = string.match(s, '^%-?(%d+)(%.?%d*)(.*)$')
  if not whole or (#whole > 1 and string.sub(whole, 1, 1) == '0') or fraction == '.' then
    return nil
  end
  if exponent ~= '' and not string.match(exponent, '^[eE][%+%-]?%d+$') then
    return nil
  end
  local n = tonumber(s)
  if n ~= n or n == math.huge or n == -math.huge then
    return nil
  end
  return n
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
if #KEYS < 1 or #KEYS > 64 or #ARGV ~= 5 then
  return redis.error_reply('BAD_ARGS expected from 1 to 64 keys and 5 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local content = ARGV[1]
if content == '' then
  return redis.error_reply('BAD_CONTENT must not be empty')
end
local weight = float(ARGV[2])
if not weight then
  return redis.error_reply(
      'BAD_WEIGHT must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' .. shown(ARGV[2]))
end
local mode = ARGV[3]
if mode ~= 'incr' and mode ~= 'set' then
  return redis.error_reply('BAD_MODE must be one of incr, set, got ' .. shown(mode))
end
local ttl = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if ARGV[4] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[4]))
end
local cap = tonumber(string.match(ARGV[5], '^[1-9]%d*$'))
if ARGV[5] ~= '' and (not cap or cap > 1000000) then
  return redis.error_reply('BAD_CAP must be an integer from 1 to 1000000, or empty, got ' .. shown(ARGV[5]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tables_parts = key_split(KEYS[1], { '', ':', '' }, true)
if not tables_parts then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<subject>}:<prefix>, got ' .. shown(KEYS[1]))
end
local tag_of_keys = tables_parts[1]
for i = 1, #KEYS do
  if not key_cut(KEYS[i], tag_of_keys .. ':', '') then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i .. '] must be {<subject>}:<prefix> with <subject> as in tables, got ' .. shown(KEYS[i]))
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
for i = 1, #KEYS do
  redis.call('ZCARD', KEYS[i])
end
local amount = string.format('%.17g', weight)
for i = 1, #KEYS do
  if mode == 'incr' then
    redis.call('ZINCRBY', KEYS[i], amount, content)
  else
    redis.call('ZADD', KEYS[i], amount, content)
  end
  if ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
  if cap then
    local excess = redis.call('ZCARD', KEYS[i]) - cap
    if excess > 0 then
      redis.call('ZREMRANGEBYRANK', KEYS[i], 0, math.min(excess, 100) - 1)
    end
  end
end
return nil
