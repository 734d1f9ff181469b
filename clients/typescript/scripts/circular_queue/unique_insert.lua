--- Appends `items` to a queue of unique items, moving any already queued to the tail.
---
--- 《Redis 应用实例》 chapter 30 (`UniqueCircularQueue.insert`). The book checks the input
--- for duplicates in Python, then runs MULTI, one `LREM key 1 item` per item (each a scan
--- of the whole list), RPUSH, EXEC. This script checks the input itself, so a caller in
--- any language gets the same guarantee, and reads the queue once: when none of the items
--- is queued it only appends them; otherwise it rewrites the queue without them, then
--- appends them, which also removes copies that other writers added. Uniqueness holds as
--- long as every write goes through this script. The queue holds at most 5,000 items, so
--- that one call stays short: an insert that would pass that is refused whole.
--- @key queue list <key>              the list; its head is the front of the queue
--- @arg items bytes...  1..=1000      the items to append, in order, no two equal
--- @return int                        the queue's length afterwards
--- @error BAD_ARGS                    not 1 key and from 1 to 1000 arguments
--- @error BAD_KEYS                    a key not named as its template says
--- @error DUPLICATE_ITEMS             an item was passed twice; nothing was written
--- @error QUEUE_FULL                  the queue would hold more than 5,000 items; nothing was written
--- @uses shown
--- @complexity O(N + M), N = the queue's length (at most 5,000), M = the number of items
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
if #KEYS ~= 1 or #ARGV < 1 or #ARGV > 1000 then
  return redis.error_reply('BAD_ARGS expected 1 key and from 1 to 1000 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local queue = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
if queue == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(queue))
end
-- End of the generated input checks.
local MAX_LENGTH = 5000

local inserting = {}
for i = 1, #ARGV do
  if inserting[ARGV[i]] then
    return redis.error_reply('DUPLICATE_ITEMS ' .. shown(ARGV[i]) .. ' is passed more than once')
  end
  inserting[ARGV[i]] = true
end

local length = redis.call('LLEN', queue)
if length > MAX_LENGTH then
  return redis.error_reply('QUEUE_FULL the queue holds ' .. length .. ' items, more than ' .. MAX_LENGTH)
end
local queued = redis.call('LRANGE', queue, 0, -1)
local kept = {}
for i = 1, #queued do
  if not inserting[queued[i]] then
    kept[#kept + 1] = queued[i]
  end
end
if #kept + #ARGV > MAX_LENGTH then
  return redis.error_reply('QUEUE_FULL the queue would hold ' .. (#kept + #ARGV) .. ' items, more than '
    .. MAX_LENGTH)
end

-- In batches: unpack() of a long list would overflow Lua's stack.
if #kept < #queued then
  redis.call('DEL', queue)
  for i = 1, #kept, 1000 do
    redis.call('RPUSH', queue, unpack(kept, i, math.min(i + 999, #kept)))
  end
end
return redis.call('RPUSH', queue, unpack(ARGV))
