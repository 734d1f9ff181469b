#!lua flags=no-writes
--- Returns every cell of a list matrix, row by row, in one consistent read.
---
--- 《Redis 应用实例》 chapter 31 (`ListMatrix.get_all`). The book reads the rows with one
--- LRANGE each, a round trip apart, so a write between two of them shows a matrix that
--- never existed; here the rows are read in one atomic step. The reply has one array per
--- key, in order, so a missing row is an empty array in its place. One call reads at most
--- 8,192 cells, so that it stays short; read a bigger matrix a range of rows at a time
--- (each range is one consistent read, the ranges are not one together). Cells come back
--- as stored: one that another client wrote as no integer is not checked here (that would
--- cost more than the read itself at 8,192 cells), and the Rust API refuses it as it
--- decodes the reply.
--- @key rows... list 1..=512 {<id>}:row:<row>  the row lists, first row first; all in one hash slot
--- @return [[decimal]]          each row's cells; an empty array for a missing row
--- @error BAD_ARGS              not from 1 to 512 keys and 0 arguments
--- @error BAD_KEYS              a key not named as its template says
--- @error TOO_BIG               the rows hold more than 8,192 cells together; read fewer rows per call
--- @complexity O(C), C = the cells read, at most 8,192
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
local MAX_CELLS = 8192

local total = 0
for r = 1, #KEYS do
  total = total + redis.call('LLEN', KEYS[r])
end
if total > MAX_CELLS then
  return redis.error_reply('TOO_BIG the rows hold ' .. total .. ' cells, more than ' .. MAX_CELLS
    .. '; read fewer rows per call')
end

local cells = {}
for r = 1, #KEYS do
  cells[r] = redis.call('LRANGE', KEYS[r], 0, -1)
end
return cells
