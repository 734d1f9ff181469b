#!lua flags=no-writes
--- Returns the bytes of every row string of a BitmapMatrix, in one consistent read.
---
--- 《Redis 应用实例》 chapter 31 (`BitmapMatrix.get_all`). The book sends one BITFIELD per
--- row, a round trip apart, so a write between two of them shows a matrix that never
--- existed; here the rows are read in one atomic step, and the caller decodes the cells
--- (big-endian, as BITFIELD stores them). Not MGET: MGET answers nil for a key of another
--- type, which would read as a row of zeros; GET fails with WRONGTYPE. One call
--- reads at most 1 MiB, so that it stays short; read a bigger matrix a range of rows at a
--- time (each range is one consistent read, the ranges are not one together).
--- @key rows... string 1..=512 {<id>}:row:<row>  the row strings, first row first; all in one hash slot
--- @return [bytes]               each row's bytes; an empty string for a missing row (all zeros)
--- @error BAD_ARGS               not from 1 to 512 keys and 0 arguments
--- @error TOO_BIG                the rows hold more than 1 MiB together; read fewer rows per call
--- @complexity O(B), B = the bytes read, at most 1 MiB
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 1 or #KEYS > 512 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected from 1 to 512 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
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
