--- Appends `items` to a queue of unique items, moving any already queued to the tail.
---
--- 《Redis 应用实例》 chapter 30 (`UniqueCircularQueue.insert`). The book checks the input
--- for duplicates in Python, then runs MULTI, one `LREM key 1 item` per item, RPUSH,
--- EXEC. This script checks the input itself, so a caller in any language gets the same
--- guarantee, and removes every copy of an item (`LREM key 0 item`), so a list that
--- gained duplicates by other writes heals. Uniqueness holds as long as every write goes
--- through this script.
--- @key queue              the list; its head is the front of the queue
--- @arg items string...    the items to append, in order, no two equal; at least one
--- @return int             the queue's length afterwards
--- @error NO_ITEMS         no item was passed
--- @error DUPLICATE_ITEMS  an item was passed twice; nothing was written
--- @complexity O(N × M), N = the queue's length, M = the number of items
local queue = KEYS[1]

if #ARGV == 0 then
  return redis.error_reply('NO_ITEMS pass at least one item')
end
local seen = {}
for i = 1, #ARGV do
  if seen[ARGV[i]] then
    return redis.error_reply('DUPLICATE_ITEMS "' .. ARGV[i] .. '" is passed more than once')
  end
  seen[ARGV[i]] = true
end

for i = 1, #ARGV do
  redis.call('LREM', queue, 0, ARGV[i])
end
-- In batches: unpack() of a long list would overflow Lua's stack.
local length = 0
for i = 1, #ARGV, 1000 do
  length = redis.call('RPUSH', queue, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
return length
