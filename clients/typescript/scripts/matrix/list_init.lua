--- Creates rows of a list matrix, one list of `cols` integers each, unless a row exists.
---
--- 《Redis 应用实例》 chapter 31 (`ListMatrix.init`). The book asserts that row 0 is
--- missing, then pushes the rows one round trip each, so two clients can both pass the
--- check and fill the matrix twice. This script checks every row it is given and writes
--- them all in one atomic step, or writes nothing. One call writes at most 2,048 cells,
--- so that it stays short: a bigger matrix is built a range of rows per call, the first
--- range holding the first row, so that of two clients building the same matrix the
--- second fails at its first call.
--- @key rows... list 1..=512 {<id>}:row:<row>  the row lists, in order; all in one hash slot
--- @arg cols uint 1..=2048              the number of columns
--- @arg values int... 0..=2048          the cells row by row (rows × cols of them), or none for zeros
--- @return nil                          nothing
--- @error BAD_ARGS                  not from 1 to 512 keys and from 1 to 2049 arguments; or not 0 or rows×cols values
--- @error BAD_COLS                      not an integer within its range
--- @error BAD_VALUES                    a value is not an integer within its range
--- @error BAD_KEYS                      a key not named as its template says
--- @error TOO_BIG                       rows × cols is more than 2,048 cells; write fewer rows per call
--- @error EXISTS                        a row of the matrix already exists; nothing was written
--- @complexity O(rows × cols), at most 2,048 cells
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
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
if #KEYS < 1 or #KEYS > 512 or #ARGV < 1 or #ARGV > 2049 then
  return redis.error_reply(
      'BAD_ARGS expected from 1 to 512 keys and from 1 to 2049 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local cols = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not cols or cols > 2048 then
  return redis.error_reply('BAD_COLS must be an integer from 1 to 2048, got ' .. shown(ARGV[1]))
end
for i = 2, #ARGV do
  local each = integer(ARGV[i], '-9223372036854775808', '9223372036854775807')
  if not each then
    return redis.error_reply(
        'BAD_VALUES ARGV[' .. i .. '] must be an integer from -2^63 to 2^63-1, got ' .. shown(ARGV[i]))
  end
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
local MAX_CELLS = 2048

if #KEYS * cols > MAX_CELLS then
  return redis.error_reply('TOO_BIG ' .. #KEYS .. ' rows of ' .. cols .. ' cells pass ' .. MAX_CELLS
    .. ' cells; write fewer rows per call')
end
local given = #ARGV - 1
if given ~= 0 and given ~= #KEYS * cols then
  return redis.error_reply('BAD_ARGS expected ' .. (#KEYS * cols) .. ' values (' .. #KEYS .. ' rows of '
    .. cols .. '), or none, got ' .. given)
end
-- In batches: unpack() of a long list would overflow Lua's stack.
for i = 1, #KEYS, 500 do
  if redis.call('EXISTS', unpack(KEYS, i, math.min(i + 499, #KEYS))) > 0 then
    return redis.error_reply('EXISTS the matrix already exists; nothing was written')
  end
end

local zeros = {}
for i = 1, math.min(cols, 500) do
  zeros[i] = 0
end
for r = 1, #KEYS do
  for c = 1, cols, 500 do
    local last = math.min(c + 499, cols)
    if given == 0 then
      redis.call('RPUSH', KEYS[r], unpack(zeros, 1, last - c + 1))
    else
      local first = 1 + (r - 1) * cols + c
      redis.call('RPUSH', KEYS[r], unpack(ARGV, first, first + last - c))
    end
  end
end
return nil
