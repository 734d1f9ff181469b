#!lua flags=no-writes
--- Returns every cell of a list matrix, row after row, in one consistent read.
---
--- 《Redis 应用实例》 chapter 31 (`ListMatrix.get_all`). The book reads the rows with one
--- LRANGE each, a round trip apart, so a write between two of them shows a matrix that
--- never existed; here all rows are read in one atomic step. The caller splits the flat
--- list into rows of its known width. Missing rows contribute nothing, so an
--- uninitialised matrix answers an empty list.
--- @key rows...          the row lists, row 0 first; all in one hash slot
--- @return [int]         the cells row by row, as decimal strings; empty when no row exists
--- @complexity O(rows × cols)
local rows = KEYS

local cells = {}
for r = 1, #rows do
  local row = redis.call('LRANGE', rows[r], 0, -1)
  for c = 1, #row do
    cells[#cells + 1] = row[c]
  end
end
return cells
