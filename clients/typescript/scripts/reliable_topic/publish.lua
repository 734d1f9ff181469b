--- Publishes a message: its id and number.
---
--- Beyond the books: a topic whose subscribers miss nothing across a disconnect (see
--- `subscribe.lua`). Each message gets the next number from `seq`, so a subscriber that
--- fell behind the stream's cap is told how many it lost. The stream keeps at most `cap`
--- messages (trimmed exactly, oldest first): the safety valve against a subscription that
--- reads nothing while its lease lasts; `ack.lua` trims it to what the slowest live
--- subscription still needs.
--- @key stream stream {<name>}:stream   the messages: id -> n <number>, m <payload>
--- @key seq string {<name>}:seq         the last message number handed out
--- @arg cap uint 1..=10^7               the most messages the stream keeps
--- @arg payload bytes                   the message
--- @return (string, uint)               the message's stream id and number
--- @error BAD_ARGS not 2 keys and 2 arguments
--- @error BAD_CAP  not an integer within its range
--- @error BAD_KEYS a key not named as its template says
--- @error BAD_SEQ        `seq` holds something other than a message count
--- @uses last_number
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; reliable_topic/_shared.lua of the scripts folder).
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
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
-- The last message number `seq_key` holds (0 for none); nil and an error reply when it
-- holds something else.
local function last_number(seq_key)
  local held = redis.call('GET', seq_key) or '0'
  local handed_out = safe_integer(held, 0, 9007199254740990)
  if not handed_out then
    return nil, redis.error_reply('BAD_SEQ ' .. shown(seq_key) .. ' holds ' .. shown(held) .. ', not a message count')
  end
  return handed_out
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local stream = KEYS[1]
local seq = KEYS[2]
local cap = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not cap or cap > 10000000 then
  return redis.error_reply('BAD_CAP must be an integer from 1 to 10000000, got ' .. shown(ARGV[1]))
end
local payload = ARGV[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(stream, '^(.+):stream$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:stream, got ' .. shown(stream))
end
if seq ~= tag_of_keys .. ':seq' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:seq with <name> as in stream, got ' .. shown(seq))
end
-- End of the generated input checks.
local last, err = last_number(seq)
if err then
  return err
end
-- XADD before `seq` moves: a `stream` of another type fails there, before any write. The
-- cap as the caller sent it (checked above), and the number as text: Redis 7.0 formats a
-- Lua number with %.17g. INCR, then, makes `seq` `last` + 1, cheaper than a SET of it.
local number = last + 1
local id = redis.call('XADD', stream, 'MAXLEN', ARGV[1], '*', 'n', string.format('%d', number), 'm', payload)
redis.call('INCR', seq)
return {id, number}
