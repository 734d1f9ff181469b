#!lua flags=no-writes
--- Returns the bytes of every row string of a BitmapMatrix, in one consistent read.
---
--- 《Redis 应用实例》 chapter 31 (`BitmapMatrix.get_all`). The book sends one BITFIELD per
--- row, a round trip apart, so a write between two of them shows a matrix that never
--- existed; here all rows are read in one atomic step, and the caller decodes the cells
--- (big-endian, as BITFIELD stores them). Not MGET: MGET answers nil for a key of another
--- type, which would read as a row of zeros; GET fails with WRONGTYPE.
--- @key rows...          the row strings, row 0 first; all in one hash slot
--- @return [bytes]       each row's bytes; an empty string for a missing row (all zeros)
--- @complexity O(rows × cols)
local rows = KEYS

local bytes = {}
for r = 1, #rows do
  bytes[r] = redis.call('GET', rows[r]) or ''
end
return bytes
