#!lua flags=no-writes
--- Returns the bytes of every row bitmap of a LogicalMatrix, in one consistent read.
---
--- 《Redis 应用实例》 chapter 32 (`LogicalMatrix.get_all`). The book sends rows × cols
--- GETBITs in one MULTI; here each row is one GET, and the caller decodes the bits
--- (bit i is bit 7 - i % 8 of byte i / 8). Not MGET: MGET answers nil for a key of
--- another type, which would read as a row of zeros; GET fails with WRONGTYPE. One call
--- reads at most 1 MiB, so that it stays short; read a bigger matrix a range of rows at a
--- time (each range is one consistent read, the ranges are not one together).
--- @key rows... string 1..=512 {<id>}:row:<row>  the row bitmaps, first row first; all in one hash slot
--- @return [bytes]               each row's bytes; an empty string for a missing row (all 0)
--- @error BAD_ARGS               not from 1 to 512 keys and 0 arguments
--- @error BAD_KEYS               a key not named as its template says
--- @error TOO_BIG                the rows hold more than 1 MiB together; read fewer rows per call
--- @complexity O(B), B = the bytes read, at most 1 MiB
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
if #KEYS < 1 or #KEYS > 512 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected from 1 to 512 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local rows_parts = key_split(KEYS[1], { '', ':row:', '' }, true)
if not rows_parts then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<id>}:row:<row>, got ' .. shown(KEYS[1]))
end
local tag_of_keys = rows_parts[1]
for i = 1, #KEYS do
  if not key_cut(KEYS[i], tag_of_keys .. ':row:', '') then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i .. '] must be {<id>}:row:<row> with <id> as in rows, got ' .. shown(KEYS[i]))
  end
end
-- End of the generated input checks.
local MAX_BYTES = 1048576

local total = 0
for r = 1, #KEYS do
  total = total + redis.call('STRLEN', KEYS[r])
end
if total > MAX_BYTES then
  return redis.error_reply('TOO_BIG the rows hold ' .. total .. ' bytes, more than ' .. MAX_BYTES
    .. ' (1 MiB); read fewer rows per call')
end

local bytes = {}
for r = 1, #KEYS do
  bytes[r] = redis.call('GET', KEYS[r]) or ''
end
return bytes
