--- Fills BITFIELD strings of `cells` typed integers each, unless one of them exists.
---
--- 《Redis 应用实例》 chapter 31 (`BitmapMatrix.init` and the unlisted `Matrix.init`). A
--- BitmapMatrix passes one key per row with `cells` = columns; a Matrix passes its one key
--- with `cells` = rows × columns. The book asserts that the first row is missing and then
--- writes one row per round trip, so two clients can both pass the check; and its
--- `init(None)` writes nothing, so the matrix does not exist afterwards. This script
--- checks every key and writes them all in one atomic step, or writes nothing; with no
--- values it writes zeros, so that the matrix exists. Each string is created at its full
--- size (cells × bits / 8 bytes, rounded up) in one allocation.
--- @key strings...       the strings, first cell first; at least one, all in one hash slot
--- @arg cell_type string the cell type as BITFIELD spells it: i8, i16, i32, i64, u8, u16, u32 or u63
--- @arg cells uint       the cells per string, at least 1; cells × the type's bits at most 2^32
--- @arg values int...    the cells in order (keys × cells of them), or none for zeros
--- @return nil           nothing
--- @error BAD_TYPE       `cell_type` is not one of the eight types
--- @error BAD_SHAPE      no keys, `cells` out of range, or neither 0 nor keys × cells values
--- @error BAD_VALUE      a value is not an integer within the type's range
--- @error EXISTS         one of the strings already exists; nothing was written
--- @complexity O(keys × cells)
local strings = KEYS
local cell_type = ARGV[1]
local cells = ARGV[2]

local bits = ({ i8 = 8, i16 = 16, i32 = 32, i64 = 64, u8 = 8, u16 = 16, u32 = 32, u63 = 63 })[cell_type]
if not bits then
  return redis.error_reply('BAD_TYPE cell_type must be i8, i16, i32, i64, u8, u16, u32 or u63, got "'
    .. cell_type .. '"')
end
if #strings == 0 then
  return redis.error_reply('BAD_SHAPE pass at least one key')
end
if not string.match(cells, '^[1-9]%d*$') or #cells > 10 or tonumber(cells) * bits > 4294967296 then
  return redis.error_reply('BAD_SHAPE cells must be a positive integer with cells × ' .. bits
    .. ' at most 2^32, got "' .. cells .. '"')
end
local n = tonumber(cells)
local given = #ARGV - 2
if given ~= 0 and given ~= #strings * n then
  return redis.error_reply('BAD_SHAPE expected ' .. (#strings * n) .. ' values (' .. #strings .. ' × '
    .. n .. '), or none, got ' .. given)
end

-- The decimal forms BITFIELD stores exactly: an optional minus, no leading zeros, and
-- within the type's range (64-bit bounds compared as strings of equal length, the
-- narrower ones exactly as Lua numbers).
local function fits(s)
  local sign, digits = string.match(s, '^(%-?)(%d+)$')
  if not digits or (#digits > 1 and string.sub(digits, 1, 1) == '0') or (sign == '-' and digits == '0') then
    return false
  end
  if string.sub(cell_type, 1, 1) == 'u' and sign == '-' then
    return false
  end
  if bits >= 63 then
    if #digits ~= 19 then
      return #digits < 19
    end
    return digits <= (sign == '-' and '9223372036854775808' or '9223372036854775807')
  end
  if #digits > 10 then
    return false
  end
  local v = tonumber(s)
  if string.sub(cell_type, 1, 1) == 'u' then
    return v < 2 ^ bits
  end
  return v >= -(2 ^ (bits - 1)) and v < 2 ^ (bits - 1)
end

for i = 3, #ARGV do
  if not fits(ARGV[i]) then
    return redis.error_reply('BAD_VALUE cell ' .. (i - 3) .. ' must be an integer that fits ' .. cell_type
      .. ', got "' .. ARGV[i] .. '"')
  end
end
for i = 1, #strings, 500 do
  if redis.call('EXISTS', unpack(strings, i, math.min(i + 499, #strings))) > 0 then
    return redis.error_reply('EXISTS the matrix already exists; nothing was written')
  end
end

-- Each string is first SET to its full size in zeros, so that it is allocated once at
-- its exact size: BITFIELD grows a string greedily (doubling it), which would leave up to
-- half of it unused for good.
local zeros = string.rep('\0', math.ceil(n * bits / 8))
for k = 1, #strings do
  redis.call('SET', strings[k], zeros)
  -- In batches of 500 cells: unpack() of a long list would overflow Lua's stack.
  for c = 0, given > 0 and n - 1 or -1, 500 do
    local args = {}
    for i = c, math.min(c + 499, n - 1) do
      args[#args + 1] = 'SET'
      args[#args + 1] = cell_type
      args[#args + 1] = '#' .. i
      args[#args + 1] = ARGV[2 + (k - 1) * n + i + 1]
    end
    redis.call('BITFIELD', strings[k], unpack(args))
  end
end
return nil
