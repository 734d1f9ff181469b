#!lua flags=no-writes
--- Returns the bytes of every row bitmap of a LogicalMatrix, in one consistent read.
---
--- 《Redis 应用实例》 chapter 32 (`LogicalMatrix.get_all`). The book sends rows × cols
--- GETBITs in one MULTI; here each row is one GET, and the caller decodes the bits
--- (bit i is bit 7 - i % 8 of byte i / 8). Not MGET: MGET answers nil for a key of
--- another type, which would read as a row of zeros; GET fails with WRONGTYPE.
--- @key rows...          the row bitmaps, row 0 first; all in one hash slot
--- @return [bytes]       each row's bytes; an empty string for a missing row (all 0)
--- @complexity O(rows × cols)
local rows = KEYS

local bytes = {}
for r = 1, #rows do
  bytes[r] = redis.call('GET', rows[r]) or ''
end
return bytes
