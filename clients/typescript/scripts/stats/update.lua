--- Adds a value to this hour's statistics (count, sum, squares, min, max), rotating the last hour out first.
---
--- Redis in Action chapter 5 (`update_stats`). The book retries a WATCH transaction for 5 s
--- (then gives up and records nothing), and finds the min and max by ZUNIONSTORE with two
--- random temporary keys, which are in other hash slots on a cluster. Here one script
--- does it all: if the hour of `now` (the caller's clock) is later than the hour held in
--- `start`, the statistics move to `last` and their hour to `pstart` (so a rotation
--- happens once per hour boundary, whoever writes first), then the value is counted.
--- A writer whose `now` is in an earlier hour counts into the current hour, as the
--- book's does: hours only move forward.
--- @key stats zset {<prefix>:<context>:<kind>}            `count`, `sum`, `sumsq`, `min`, `max` -> their values
--- @key start string {<prefix>:<context>:<kind>}:start    the hour the statistics are of (Unix s of its start)
--- @key last zset {<prefix>:<context>:<kind>}:last        the previous hour's statistics
--- @key pstart string {<prefix>:<context>:<kind>}:pstart  the previous hour (Unix s of its start)
--- @arg value float           the value; at most 10^100 in size, so that its square stays finite
--- @arg now uint 0..=10^15-1  when it happened (ms, the caller's clock)
--- @return (float, float, float)   the count, the sum and the sum of squares after the update, as the book's
--- @error BAD_ARGS            not 4 keys and 2 arguments
--- @error BAD_VALUE           not a finite decimal number, or more than 10^100 in size
--- @error BAD_NOW             not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_START           `start` holds something other than an hour's start (whole s, from 0 to 10^12 - 1)
--- @error BAD_STATS           `stats` holds a count, sum or sum of squares that is an infinity; nothing was written
--- @uses held_hour rotate_hour
--- @clock caller
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua of the scripts folder).
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
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
-- Whether group content `c` is made of values as `texts` says (see key_split), with its hash
-- tag, when it holds one, inside one value: read with the tag as one byte that no text
-- holds, as a tag across two values would hash by text that neither holds.
local function key_content_fits(c, texts)
  local open = string.find(c, '{', 1, true)
  local close = open and string.find(c, '}', open + 1, true)
  if close and close > open + 1 then
    c = string.sub(c, 1, open - 1) .. '\0' .. string.sub(c, close + 1)
  end
  return key_split(c, texts) ~= nil
end
-- Whether hash tag group `g` is made of values as `texts` says (see key_content_fits): the
-- text between its braces, or `g` itself when it holds a hash tag.
local function key_group_fits(g, texts)
  local inner = string.match(g, '^{([^}]+)}$')
  return (inner ~= nil and key_split(inner, texts) ~= nil) or key_content_fits(g, texts)
end
-- The hour whose totals a zset of hourly statistics holds, as its `start` key keeps it:
-- whole seconds, a multiple of 3600, or nil when none is kept yet; nil and an error
-- reply when the key holds something else.
local function held_hour(start_key)
  local held = redis.call('GET', start_key)
  if held and not (safe_integer(held, 0, 999999999999) and tonumber(held) % 3600 == 0) then
    return nil, redis.error_reply('BAD_START ' .. shown(start_key) .. ' holds ' .. shown(held)
      .. ', not the start of an hour in whole seconds')
  end
  return held
end
-- Moves hourly statistics on to the hour that starts at `hour` (whole seconds, as text):
-- when `held` (as held_hour read it) is an earlier hour, the current zset becomes the last
-- hour's, and the hour before last goes.
local function rotate_hour(current_key, last_key, start_key, pstart_key, held, hour)
  if not held then
    redis.call('SET', start_key, hour)
  elseif tonumber(held) < tonumber(hour) then
    -- UNLINK: the hour before last may be big; it is freed in the background.
    redis.call('UNLINK', last_key)
    if redis.call('EXISTS', current_key) == 1 then
      redis.call('RENAME', current_key, last_key)
    end
    redis.call('SET', pstart_key, held)
    redis.call('SET', start_key, hour)
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local stats = KEYS[1]
local start = KEYS[2]
local last = KEYS[3]
local pstart = KEYS[4]
local value = float(ARGV[1])
if not value then
  return redis.error_reply(
      'BAD_VALUE must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' .. shown(ARGV[1]))
end
local now = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not now or now > 999999999999999 then
  return redis.error_reply('BAD_NOW must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if stats == '' or not string.find(stats, '^[^{]*{[^}]+}') or not key_group_fits(stats, { '', ':', ':', '' }) then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<prefix>:<context>:<kind>}, got ' .. shown(stats))
end
if start ~= stats .. ':start' or last ~= stats .. ':last' or pstart ~= stats .. ':pstart' then
  for i, each in ipairs({ ':start', ':last', ':pstart' }) do
    if KEYS[i + 1] ~= stats .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<prefix>:<context>:<kind>}' .. each ..
          ' with the hash tag as in stats, got ' .. shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
if math.abs(value) > 1e100 then
  return redis.error_reply('BAD_VALUE value must be at most 10^100 in size, got '
    .. string.format('%q', string.sub(ARGV[1], 1, 32)))
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', stats)
redis.call('ZCARD', last)
redis.call('STRLEN', pstart)
local held, bad = held_hour(start)
if bad then
  return bad
end
local hour = string.format('%d', math.floor(now / 3600000) * 3600)
-- Statistics that stay this hour's are added to: each must be a finite number (another
-- client may have written an infinity, which no sum of values of at most 10^100 reaches).
if not (held and tonumber(held) < tonumber(hour)) then
  local totals = redis.call('ZMSCORE', stats, 'count', 'sum', 'sumsq')
  for i, name in ipairs({ 'count', 'sum', 'sumsq' }) do
    local total = tonumber(totals[i] or '0')
    if total == math.huge or total == -math.huge then
      return redis.error_reply('BAD_STATS the ' .. name .. ' is ' .. totals[i] .. ', not a finite number')
    end
  end
end
rotate_hour(stats, last, start, pstart, held, hour)
local min, max = tonumber(redis.call('ZSCORE', stats, 'min')), tonumber(redis.call('ZSCORE', stats, 'max'))
if not min or value < min then
  redis.call('ZADD', stats, value, 'min')
end
if not max or value > max then
  redis.call('ZADD', stats, value, 'max')
end
return {
  redis.call('ZINCRBY', stats, 1, 'count'),
  redis.call('ZINCRBY', stats, value, 'sum'),
  redis.call('ZINCRBY', stats, value * value, 'sumsq'),
}
