#!lua flags=no-writes
--- The friends of a user seen in any of the given minutes (design a).
---
--- 《Redis入门指南》 §5.3.4, design a. The book takes the union of the last N minutes'
--- sets into a temporary key and intersects it with the friends set; here the friends not
--- found yet are looked up in each minute's set in turn (SMISMEMBER), newest first, with
--- no temporary key, so concurrent callers never share one, and a friend found is not
--- looked up again. The work is at most one lookup per friend per minute, so the window
--- is at most 10 minutes and the friends set holds at most 300 users.
--- @key friends set {<ns>}:friends:<user>  the user's friends
--- @key minutes... set 1..=10 {<ns>}:active.users:<minute>  the sets of the last N minutes, newest first
--- @return [string]           the friends seen in any of them
--- @error BAD_ARGS            not from 2 to 11 keys and 0 arguments
--- @error BAD_KEYS            a key not named as its template says
--- @error TOO_MANY_FRIENDS    the friends set holds more than 300 users
--- @complexity O(F × N), F = the friends, N = the minutes
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
if #KEYS < 2 or #KEYS > 11 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected from 2 to 11 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local friends = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local friends_parts = key_split(friends, { '', ':friends:', '' }, true)
if not friends_parts then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<ns>}:friends:<user>, got ' .. shown(friends))
end
local tag_of_keys = friends_parts[1]
for i = 2, #KEYS do
  if not key_cut(KEYS[i], tag_of_keys .. ':active.users:', '') then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i .. '] must be {<ns>}:active.users:<minute> with <ns> as in friends, got ' ..
        shown(KEYS[i]))
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whoever the friends are.
for m = 2, #KEYS do
  redis.call('SCARD', KEYS[m])
end
local count = redis.call('SCARD', friends)
if count > 300 then
  return redis.error_reply('TOO_MANY_FRIENDS the friends set holds ' .. count .. ' users; at most 300')
end
local online = {}
if count == 0 then
  return online
end
-- Each minute looks up only the friends no earlier minute found (SINTER would answer
-- every friend seen in it again, minute after minute).
local left = redis.call('SMEMBERS', friends)
for m = 2, #KEYS do
  local found = redis.call('SMISMEMBER', KEYS[m], unpack(left))
  local still = {}
  for i, is_member in ipairs(found) do
    if is_member == 1 then
      online[#online + 1] = left[i]
    else
      still[#still + 1] = left[i]
    end
  end
  if #still == 0 then
    break
  end
  left = still
end
return online
