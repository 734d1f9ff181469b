--- Stores packed bitmaps of `bits` bits each, unless one of the keys exists.
---
--- 《Redis 应用实例》 chapter 32 (`LogicalMatrix.init`, `CompactLogicalMatrix.init`). A
--- LogicalMatrix passes one key per row with `bits` = columns; a CompactLogicalMatrix
--- passes its one key with `bits` = rows × columns. Each bitmap comes packed as SETBIT
--- numbers bits: bit i is bit 7 - i % 8 of byte i / 8, most significant first, and the
--- unused bits of the last byte are 0. The book sends one SETBIT per cell in a
--- MULTI, with no existence check (a second init overwrites the first, cell by cell) and
--- no shape check; here the whole matrix is one SET per bitmap, all or nothing.
--- @key bitmaps...       the bitmaps, first bit first; at least one, all in one hash slot
--- @arg bits uint        the bits per bitmap, from 1 to 2^32
--- @arg packed bytes...  each bitmap's bytes, one per key: ceil(bits / 8) bytes each
--- @return nil           nothing
--- @error BAD_SHAPE      no keys, `bits` out of 1 to 2^32, or not one value of ceil(bits / 8) bytes per key
--- @error BAD_PADDING    a bitmap sets one of the unused bits after its last cell
--- @error EXISTS         one of the bitmaps already exists; nothing was written
--- @complexity O(keys × bits)
local bitmaps = KEYS
local bits = ARGV[1]

if #bitmaps == 0 then
  return redis.error_reply('BAD_SHAPE pass at least one key')
end
if not string.match(bits, '^[1-9]%d*$') or #bits > 10 or tonumber(bits) > 4294967296 then
  return redis.error_reply('BAD_SHAPE bits must be an integer from 1 to 2^32, got "' .. bits .. '"')
end
local n = tonumber(bits)
if #ARGV - 1 ~= #bitmaps then
  return redis.error_reply('BAD_SHAPE expected one packed value per key (' .. #bitmaps .. '), got '
    .. (#ARGV - 1))
end
local size = math.ceil(n / 8)
local unused = size * 8 - n
for k = 1, #bitmaps do
  local packed = ARGV[k + 1]
  if #packed ~= size then
    return redis.error_reply('BAD_SHAPE bitmap ' .. (k - 1) .. ' must be ' .. size .. ' bytes for ' .. n
      .. ' bits, got ' .. #packed)
  end
  if string.byte(packed, size) % 2 ^ unused ~= 0 then
    return redis.error_reply('BAD_PADDING bitmap ' .. (k - 1) .. ' sets one of the ' .. unused
      .. ' unused bits after its last cell')
  end
end
for i = 1, #bitmaps, 500 do
  if redis.call('EXISTS', unpack(bitmaps, i, math.min(i + 499, #bitmaps))) > 0 then
    return redis.error_reply('EXISTS the matrix already exists; nothing was written')
  end
end

for k = 1, #bitmaps do
  redis.call('SET', bitmaps[k], ARGV[k + 1])
end
return nil
