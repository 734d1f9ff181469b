#!lua flags=no-writes
--- A subject's up and down votes, and one user's vote, read at one moment.
---
--- 《Redis 应用实例》 chapter 21 (`Vote.total`, `is_voted`). The book's `is_voted` answers
--- `a or b` of two SISMEMBERs, so it cannot tell an up vote from a down vote; here the
--- user's vote is 1 (up), -1 (down) or 0 (none).
--- @key up set {<namespace>}:up:<subject>      the users who voted the subject up
--- @key down set {<namespace>}:down:<subject>  the users who voted it down
--- @arg user bytes           whose vote to report (any bytes); empty for nobody's
--- @return (int, int, int)    ups, downs, the user's vote: 1 up, -1 down, 0 none
--- @error BAD_ARGS            not 2 keys and 1 argument
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local up = KEYS[1]
local down = KEYS[2]
local user = ARGV[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local up_parts = key_split(up, { '', ':up:', '' }, true)
if not up_parts then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:up:<subject>, got ' .. shown(up))
end
local tag_of_keys = up_parts[1]
local subject_of_keys = up_parts[2]
if down ~= tag_of_keys .. ':down:' .. subject_of_keys then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:down:<subject> with <namespace> as in up and <subject> as in up, got ' ..
      shown(down))
end
-- End of the generated input checks.
local mine = 0
if user ~= '' then
  if redis.call('SISMEMBER', up, user) == 1 then
    mine = 1
  elseif redis.call('SISMEMBER', down, user) == 1 then
    mine = -1
  end
end
return { redis.call('SCARD', up), redis.call('SCARD', down), mine }
