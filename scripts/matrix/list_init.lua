--- Creates a list matrix, one list of `cols` integers per row, unless a row exists.
---
--- 《Redis 应用实例》 chapter 31 (`ListMatrix.init`). The book asserts that row 0 is
--- missing, then pushes the rows one round trip each, so two clients can both pass the
--- check and fill the matrix twice. This script checks every row and writes them all in
--- one atomic step, or writes nothing.
--- @key rows...          the row lists, row 0 first; at least one, all in one hash slot
--- @arg cols uint        the number of columns, from 1 to 2^32
--- @arg values int...    the cells row by row (rows × cols of them), or none for zeros
--- @return nil           nothing
--- @error BAD_SHAPE      no row keys, `cols` out of 1 to 2^32, or neither 0 nor rows × cols values
--- @error BAD_VALUE      a value is not a signed 64-bit integer in decimal
--- @error EXISTS         a row of the matrix already exists; nothing was written
--- @complexity O(rows × cols)
local rows = KEYS
local cols = ARGV[1]

-- True when s is the decimal form Redis prints for a signed 64-bit integer: an optional
-- minus, no leading zeros, within range (compared as strings of equal length).
local function is_int64(s)
  local sign, digits = string.match(s, '^(%-?)(%d+)$')
  if not digits or (#digits > 1 and string.sub(digits, 1, 1) == '0') or (sign == '-' and digits == '0') then
    return false
  end
  if #digits ~= 19 then
    return #digits < 19
  end
  return digits <= (sign == '-' and '9223372036854775808' or '9223372036854775807')
end

if #rows == 0 then
  return redis.error_reply('BAD_SHAPE pass at least one row key')
end
if not string.match(cols, '^[1-9]%d*$') or #cols > 10 or tonumber(cols) > 4294967296 then
  return redis.error_reply('BAD_SHAPE cols must be an integer from 1 to 2^32, got "' .. cols .. '"')
end
local n = tonumber(cols)
local given = #ARGV - 1
if given ~= 0 and given ~= #rows * n then
  return redis.error_reply('BAD_SHAPE expected ' .. (#rows * n) .. ' values (' .. #rows .. ' rows of '
    .. n .. '), or none, got ' .. given)
end
for i = 2, #ARGV do
  if not is_int64(ARGV[i]) then
    return redis.error_reply('BAD_VALUE cell ' .. (i - 2) .. ' must be a signed 64-bit integer, got "'
      .. ARGV[i] .. '"')
  end
end
-- In batches: unpack() of a long list would overflow Lua's stack.
for i = 1, #rows, 500 do
  if redis.call('EXISTS', unpack(rows, i, math.min(i + 499, #rows))) > 0 then
    return redis.error_reply('EXISTS the matrix already exists; nothing was written')
  end
end

local zeros = {}
for i = 1, math.min(n, 500) do
  zeros[i] = 0
end
for r = 1, #rows do
  for c = 1, n, 500 do
    local last = math.min(c + 499, n)
    if given == 0 then
      redis.call('RPUSH', rows[r], unpack(zeros, 1, last - c + 1))
    else
      local first = 1 + (r - 1) * n + c
      redis.call('RPUSH', rows[r], unpack(ARGV, first, first + last - c))
    end
  end
end
return nil
