--- Removes a content from the suggestion table of each of its prefixes, in one step.
---
--- Beyond the book, which has no way to take a suggestion back. Tables left empty are
--- deleted by Redis.
--- @key tables... zset 1..=64 {<subject>}:<prefix>  the prefix tables of the content, shortest prefix first
--- @arg content string non-empty   the content to remove
--- @return uint               how many tables held it
--- @error BAD_ARGS            not from 1 to 64 keys and 1 argument
--- @error BAD_CONTENT         empty
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(P log T), P = the prefixes, T = a table's entries
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
if #KEYS < 1 or #KEYS > 64 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected from 1 to 64 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local content = ARGV[1]
if content == '' then
  return redis.error_reply('BAD_CONTENT must not be empty')
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
local removed = 0
for i = 1, #KEYS do
  removed = removed + redis.call('ZREM', KEYS[i], content)
end
return removed
