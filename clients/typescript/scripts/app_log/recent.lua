--- Logs a message to a recent log: pushes it with the server's time and keeps the last `keep`, in one step.
---
--- Redis in Action chapter 5 (`log_recent`): `LPUSH recent:<name>:<severity>` then
--- `LTRIM … 0 99`, in a MULTI of their own. The book prefixes the message with the web
--- server's `time.asctime()`; here the entry is `<ms> <message>`, the server's clock in
--- Unix ms (Lua in Redis has no date formatting, and one clock orders every server's
--- entries).
--- @key recent list recent:{<name>:<severity>}  the newest entries first, each `<ms> <message>`
--- @arg message string        the message
--- @arg keep uint 1..=10000   how many entries to keep (the book's 100)
--- @return int                when it was logged (ms, server clock)
--- @error BAD_ARGS            not 1 key and 2 arguments
--- @error BAD_KEEP            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @clock server
--- @complexity O(1): the trim drops one entry at most
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local recent = KEYS[1]
local message = ARGV[1]
local keep = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(recent, '^recent:(.+)$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') or
    not key_group_fits(tag_of_keys, { '', ':', '' }) then
  return redis.error_reply('BAD_KEYS KEYS[1] must be recent:{<name>:<severity>}, got ' .. shown(recent))
end
-- End of the generated input checks.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('LPUSH', recent, string.format('%d', now) .. ' ' .. message)
redis.call('LTRIM', recent, 0, keep - 1)
return now
