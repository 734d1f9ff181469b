--- Marks `user` online in the set of the current minute (design a: one set per minute).
---
--- 《Redis入门指南》 §5.3.4, design a: each minute of the hour has a set of the users
--- seen in it, named by the minute (`active.users:<MM>`, 00 to 59), so the name of a
--- minute comes back every hour. The set expires `expiry` after its last visit; keep `expiry`
--- well under an hour (at most 50 minutes here), so that a set is gone before its name is
--- used again. The book adds and sets the expiry in two commands; a crash between them
--- would leave a set with no expiry, whose users would come back online an hour later.
--- Here both are one step.
--- @key minute set {<ns>}:active.users:<minute>  the set of the current minute, `active.users:<MM>`
--- @arg user string non-empty    the user seen
--- @arg expiry ms 1..=3000000    how long the set lives after its last visit (at most 50 minutes)
--- @return bool               1 if the user was not yet in this minute's set
--- @error BAD_ARGS            not 1 key and 2 arguments
--- @error BAD_USER            empty
--- @error BAD_EXPIRY          not whole milliseconds within its range
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(1)
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local minute = KEYS[1]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER must not be empty')
end
local expiry = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not expiry or expiry > 3000000 then
  return redis.error_reply('BAD_EXPIRY must be whole milliseconds from 1 to 3000000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if not key_split(minute, { '', ':active.users:', '' }, true) then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<ns>}:active.users:<minute>, got ' .. shown(minute))
end
-- End of the generated input checks.
local added = redis.call('SADD', minute, user)
redis.call('PEXPIRE', minute, expiry)
return added
