#!lua flags=no-writes
--- Returns every cell of a list matrix, row by row, in one consistent read.
---
--- 《Redis 应用实例》 chapter 31 (`ListMatrix.get_all`). The book reads the rows with one
--- LRANGE each, a round trip apart, so a write between two of them shows a matrix that
--- never existed; here the rows are read in one atomic step. The reply has one array per
--- key, in order, so a missing row is an empty array in its place. One call reads at most
--- 8,192 cells, so that it stays short; read a bigger matrix a range of rows at a time
--- (each range is one consistent read, the ranges are not one together).
--- @key rows... list 1..=512 {<id>}:row:<row>  the row lists, first row first; all in one hash slot
--- @return [[decimal]]          each row's cells; an empty array for a missing row
--- @error BAD_ARGS              not from 1 to 512 keys and 0 arguments
--- @error TOO_BIG               the rows hold more than 8,192 cells together; read fewer rows per call
--- @complexity O(C), C = the cells read, at most 8,192
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 1 or #KEYS > 512 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected from 1 to 512 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
-- End of the generated input checks.
local MAX_CELLS = 8192

local total = 0
for r = 1, #KEYS do
  total = total + redis.call('LLEN', KEYS[r])
end
if total > MAX_CELLS then
  return redis.error_reply('TOO_BIG the rows hold ' .. total .. ' cells, more than ' .. MAX_CELLS
    .. '; read fewer rows per call')
end

local cells = {}
for r = 1, #KEYS do
  cells[r] = redis.call('LRANGE', KEYS[r], 0, -1)
end
return cells
