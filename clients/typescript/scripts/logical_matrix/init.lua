--- Stores packed bitmaps of `bits` bits each, unless one of the keys exists.
---
--- 《Redis 应用实例》 chapter 32 (`LogicalMatrix.init`, `CompactLogicalMatrix.init`). A
--- LogicalMatrix passes one key per row with `bits` = columns; a CompactLogicalMatrix
--- passes its one key with `bits` = rows × columns. Each bitmap comes packed as SETBIT
--- numbers bits: bit i is bit 7 - i % 8 of byte i / 8, most significant first, and the
--- unused bits of the last byte are 0; an empty value stands for all zeros. The book sends
--- one SETBIT per cell in a MULTI, with no existence check (a second init overwrites the
--- first, cell by cell) and no shape check; here the bitmaps are one SET each, all or
--- nothing. One call writes at most 1 MiB, so that it stays short: a bigger matrix is
--- built a range of rows per call, the first range holding the first row, so that of two
--- clients building the same matrix the second fails at its first call.
--- @key bitmaps... string 1..=512 <key>  the rows as get_all.lua names them, or a compact matrix's one key
--- @arg bits uint 1..=2^23          the bits per bitmap (a bitmap holds at most 1 MiB)
--- @arg packed bytes... 1..=512    each bitmap's bytes, one per key: ceil(bits / 8) bytes, or empty for zeros
--- @return nil                      nothing
--- @error BAD_ARGS                  not from 1 to 512 keys and from 2 to 513 arguments; or not one packed value per key
--- @error BAD_BITS                  not an integer within its range
--- @error BAD_KEYS                  a key not named as its template says
--- @error BAD_SHAPE                 a packed value is neither empty nor ceil(bits / 8) bytes
--- @error BAD_PADDING               a bitmap sets one of the unused bits after its last cell
--- @error TOO_BIG                   the bitmaps hold more than 1 MiB together; write fewer per call
--- @error EXISTS                    one of the bitmaps already exists; nothing was written
--- @complexity O(B), B = the bytes written, at most 1 MiB
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 1 or #KEYS > 512 or #ARGV < 2 or #ARGV > 513 then
  return redis.error_reply(
      'BAD_ARGS expected from 1 to 512 keys and from 2 to 513 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local bits = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not bits or bits > 8388608 then
  return redis.error_reply('BAD_BITS must be an integer from 1 to 8388608, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
for i = 1, #KEYS do
  if KEYS[i] == '' then
    return redis.error_reply('BAD_KEYS KEYS[' .. i .. '] must be <key>, got ' .. shown(KEYS[i]))
  end
end
-- End of the generated input checks.
local MAX_BYTES = 1048576

if #ARGV - 1 ~= #KEYS then
  return redis.error_reply('BAD_ARGS expected one packed value per key (' .. #KEYS .. '), got ' .. (#ARGV - 1))
end
local size = math.ceil(bits / 8)
if size * #KEYS > MAX_BYTES then
  return redis.error_reply('TOO_BIG ' .. #KEYS .. ' bitmaps of ' .. size .. ' bytes pass ' .. MAX_BYTES
    .. ' bytes (1 MiB); write fewer per call')
end
local unused = size * 8 - bits
for k = 1, #KEYS do
  local value = ARGV[k + 1]
  if #value ~= size and #value ~= 0 then
    return redis.error_reply('BAD_SHAPE bitmap ' .. (k - 1) .. ' must be empty or ' .. size .. ' bytes for ' .. bits
      .. ' bits, got ' .. #value)
  end
  if #value > 0 and string.byte(value, size) % 2 ^ unused ~= 0 then
    return redis.error_reply('BAD_PADDING bitmap ' .. (k - 1) .. ' sets one of the ' .. unused
      .. ' unused bits after its last cell')
  end
end
-- In batches: unpack() of a long list would overflow Lua's stack.
for i = 1, #KEYS, 500 do
  if redis.call('EXISTS', unpack(KEYS, i, math.min(i + 499, #KEYS))) > 0 then
    return redis.error_reply('EXISTS the matrix already exists; nothing was written')
  end
end

for k = 1, #KEYS do
  if #ARGV[k + 1] > 0 then
    redis.call('SET', KEYS[k], ARGV[k + 1])
  else
    -- Redis allocates the string and zeroes it.
    redis.call('SETRANGE', KEYS[k], size - 1, '\0')
  end
end
return nil
