#!lua flags=no-writes
--- Lists a user's live sessions, soonest to expire first, with the time each has left.
---
--- Beyond the book (one session per user). For a "your devices" page: each id can be
--- ended with end.lua. Sessions that have expired but are not yet forgotten are left out.
--- The index is never longer than the largest cap, 1000 (see create.lua).
--- @key sessions zset {<namespace>:<uid>}:sessions  session id -> deadline (ms, server clock)
--- @return [(string, uint)]   each live session: its id and milliseconds left, soonest to expire first
--- @error BAD_ARGS            not 1 key and 0 arguments
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_SESSIONS        `sessions` holds a live deadline that is not whole ms (another client wrote it)
--- @uses bad_deadline
--- @clock server
--- @complexity O(log N + M), N = the user's sessions, M = the live ones listed (at most 1000)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; session/_shared.lua of the scripts folder).
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
-- An error reply when `deadline` (a score of the sessions set, as Redis spells it) is
-- not whole ms, as these scripts write deadlines; nothing when it is, or when it is nil.
local function bad_deadline(id, deadline)
  if deadline and not safe_integer(deadline, 0, 9007199254740991) then
    return redis.error_reply('BAD_SESSIONS session ' .. shown(id) .. ' lasts until ' .. shown(deadline)
      .. ', not a time in whole ms')
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 1 key and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local sessions = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(sessions, '^(.+):sessions$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') or
    not key_group_fits(tag_of_keys, { '', ':', '' }) then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>:<uid>}:sessions, got ' .. shown(sessions))
end
-- End of the generated input checks.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', sessions, '(' .. string.format('%d', now), '+inf',
  'WITHSCORES', 'LIMIT', 0, 1000)
local rows = {}
for i = 1, #live, 2 do
  local bad = bad_deadline(live[i], live[i + 1])
  if bad then
    return bad
  end
  -- An integer reply: the time left is whole and below 2^53.
  rows[#rows + 1] = { live[i], tonumber(live[i + 1]) - now }
end
return rows
