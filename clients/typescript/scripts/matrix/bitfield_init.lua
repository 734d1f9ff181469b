--- Stores BITFIELD strings of `cells` typed integers each, unless one of them exists.
---
--- 《Redis 应用实例》 chapter 31 (`BitmapMatrix.init` and the unlisted `Matrix.init`). A
--- BitmapMatrix passes one key per row with `cells` = columns; a Matrix passes its one key
--- with `cells` = rows × columns. The book asserts that the first row is missing and then
--- writes one row per round trip, so two clients can both pass the check; and its
--- `init(None)` writes nothing, so the matrix does not exist afterwards. This script
--- checks every key and writes them all in one atomic step, or writes nothing. Each
--- string comes packed as BITFIELD stores it: cell i is the `cell_type` integer at bit
--- i × bits, big-endian, two's complement when signed, and the unused bits of the last
--- byte are 0; an empty value stands for all zeros (the string is still created at its
--- full size, so the matrix exists). One call writes at most 1 MiB, so that it stays
--- short: a bigger matrix is built a range of rows per call, the first range holding the
--- first row, so that of two clients building the same matrix the second fails at its
--- first call.
--- @key strings... string 1..=512 <key>  the rows as bitmap_get_all.lua names them, or a Matrix's one key
--- @arg cell_type string i8|i16|i32|i64|u8|u16|u32|u63  the cell type as BITFIELD spells it
--- @arg cells uint 1..=2^23                        the cells per string; cells × bits at most 2^23 (1 MiB)
--- @arg packed bytes... 1..=512                   each string's bytes, one per key, or empty for zeros
--- @return nil                                     nothing
--- @error BAD_ARGS                                 not from 1 to 512 keys and from 3 to 514 arguments; or keys ≠ values
--- @error BAD_CELL_TYPE                            not one of its choices
--- @error BAD_CELLS                                not an integer within its range
--- @error BAD_KEYS                                 a key not named as its template says
--- @error BAD_SHAPE                                a string is neither empty nor ceil(cells × bits / 8) bytes
--- @error BAD_PADDING                              a string sets one of the unused bits after its last cell
--- @error TOO_BIG                                  the strings hold more than 1 MiB, together or one alone
--- @error EXISTS                                   one of the strings already exists; nothing was written
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
if #KEYS < 1 or #KEYS > 512 or #ARGV < 3 or #ARGV > 514 then
  return redis.error_reply(
      'BAD_ARGS expected from 1 to 512 keys and from 3 to 514 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local cell_type = ARGV[1]
if cell_type ~= 'i8' and cell_type ~= 'i16' and cell_type ~= 'i32' and cell_type ~= 'i64' and cell_type ~= 'u8' and
    cell_type ~= 'u16' and cell_type ~= 'u32' and cell_type ~= 'u63' then
  return redis.error_reply(
      'BAD_CELL_TYPE must be one of i8, i16, i32, i64, u8, u16, u32, u63, got ' .. shown(cell_type))
end
local cells = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not cells or cells > 8388608 then
  return redis.error_reply('BAD_CELLS must be an integer from 1 to 8388608, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
for i = 1, #KEYS do
  if KEYS[i] == '' then
    return redis.error_reply('BAD_KEYS KEYS[' .. i .. '] must be <key>, got ' .. shown(KEYS[i]))
  end
end
-- End of the generated input checks.
local MAX_BYTES = 1048576

if #ARGV - 2 ~= #KEYS then
  return redis.error_reply('BAD_ARGS expected one packed value per key (' .. #KEYS .. '), got ' .. (#ARGV - 2))
end
local bits = tonumber(string.sub(cell_type, 2)) * cells
local size = math.ceil(bits / 8)
if size * #KEYS > MAX_BYTES then
  return redis.error_reply('TOO_BIG ' .. #KEYS .. ' strings of ' .. size .. ' bytes pass ' .. MAX_BYTES
    .. ' bytes (1 MiB); write fewer per call')
end
local unused = size * 8 - bits
for k = 1, #KEYS do
  local value = ARGV[k + 2]
  if #value ~= size and #value ~= 0 then
    return redis.error_reply('BAD_SHAPE string ' .. (k - 1) .. ' must be empty or ' .. size .. ' bytes for '
      .. cells .. ' ' .. cell_type .. ' cells, got ' .. #value)
  end
  if #value > 0 and string.byte(value, size) % 2 ^ unused ~= 0 then
    return redis.error_reply('BAD_PADDING string ' .. (k - 1) .. ' sets one of the ' .. unused
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
  if #ARGV[k + 2] > 0 then
    redis.call('SET', KEYS[k], ARGV[k + 2])
  else
    -- Redis allocates the string at its full size and zeroes it.
    redis.call('SETRANGE', KEYS[k], size - 1, '\0')
  end
end
return nil
