--- Counts a message in this hour's common log, rotating the last hour out first, and logs it as recent.
---
--- Redis in Action chapter 5 (`log_common`). The book retries a WATCH transaction for
--- 5 s and then returns having logged nothing, silently; fails when `:start` exists but
--- the counts do not (RENAME of a missing key); and, comparing hour numbers of the day,
--- never rotates again after midnight. Here one script on the server's clock: if the
--- current hour (Unix s of its start) is later than the one in `start`, the counts move
--- to `last` and their hour to `pstart`, once per hour boundary whoever logs first; then
--- the message is counted and pushed to the recent log (`<ms> <message>`, the last
--- `keep` kept).
--- @key common zset common:{<name>:<severity>}           message -> how many times it was logged this hour
--- @key start string common:{<name>:<severity>}:start    the hour the counts are of (Unix s of its start)
--- @key last zset common:{<name>:<severity>}:last        the previous hour's counts
--- @key pstart string common:{<name>:<severity>}:pstart  the previous hour (Unix s of its start)
--- @key recent list recent:{<name>:<severity>}           the newest entries first, each `<ms> <message>`
--- @arg message string        the message
--- @arg keep uint 1..=10000   how many recent entries to keep (the book's 100)
--- @return int                the message's count this hour
--- @error BAD_ARGS            not 5 keys and 2 arguments
--- @error BAD_KEEP            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_START           `start` holds something other than an hour's start (whole s, from 0 to 10^12 - 1)
--- @error BAD_COMMON          `common` holds a count for the message that is no count; nothing was written
--- @uses held_hour rotate_hour safe_integer shown
--- @clock server
--- @complexity O(log N), N = the distinct messages this hour
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
if #KEYS ~= 5 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local common = KEYS[1]
local start = KEYS[2]
local last = KEYS[3]
local pstart = KEYS[4]
local recent = KEYS[5]
local message = ARGV[1]
local keep = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(common, '^common:(.+)$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') or
    not key_group_fits(tag_of_keys, { '', ':', '' }) then
  return redis.error_reply('BAD_KEYS KEYS[1] must be common:{<name>:<severity>}, got ' .. shown(common))
end
if start ~= 'common:' .. tag_of_keys .. ':start' or last ~= 'common:' .. tag_of_keys .. ':last' or
    pstart ~= 'common:' .. tag_of_keys .. ':pstart' then
  for i, each in ipairs({ ':start', ':last', ':pstart' }) do
    if KEYS[i + 1] ~= 'common:' .. tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be common:{<name>:<severity>}' .. each ..
          ' with the hash tag as in common, got ' .. shown(KEYS[i + 1]))
    end
  end
end
if recent ~= 'recent:' .. tag_of_keys then
  return redis.error_reply(
      'BAD_KEYS KEYS[5] must be recent:{<name>:<severity>} with the hash tag as in common, got ' .. shown(recent))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', common)
redis.call('ZCARD', last)
redis.call('STRLEN', pstart)
redis.call('LLEN', recent)
local held, bad = held_hour(start)
if bad then
  return bad
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local hour = string.format('%d', math.floor(tonumber(time[1]) / 3600) * 3600)
-- A count that stays this hour's is added to: it must be one (another client may have
-- written a fraction or an infinity).
if not (held and tonumber(held) < tonumber(hour)) then
  local count = redis.call('ZSCORE', common, message)
  if count and not safe_integer(count, 0, 9007199254740990) then
    return redis.error_reply('BAD_COMMON the message\'s count is ' .. shown(count) .. ', not a count')
  end
end
rotate_hour(common, last, start, pstart, held, hour)
local count = redis.call('ZINCRBY', common, 1, message)
redis.call('LPUSH', recent, string.format('%d', now) .. ' ' .. message)
redis.call('LTRIM', recent, 0, keep - 1)
return tonumber(count)
