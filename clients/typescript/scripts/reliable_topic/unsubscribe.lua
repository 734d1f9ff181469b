--- Ends a subscription: true when there was one.
---
--- Beyond the books: the subscription no longer holds the stream back (the stream is
--- trimmed to the slowest one left, at most 1000 messages, as `ack.lua` trims); its
--- position is forgotten, and a later `subscribe.lua` with its name starts anew.
--- @key stream stream {<name>}:stream        the messages: id -> n <number>, m <payload>
--- @key seq string {<name>}:seq              the last message number handed out
--- @key subs zset {<name>}:subs              subscription -> its lease deadline (ms, server clock)
--- @key cursors zset {<name>}:cursors        subscription -> the number of the last message it acknowledged
--- @key positions hash {<name>}:positions    subscription -> "<id> <number>" of the last message it acknowledged
--- @arg subscription string len:1..=200  the subscription's name
--- @return bool                          1 when it existed
--- @error BAD_ARGS not 5 keys and 1 argument
--- @error BAD_SUBSCRIPTION not from 1 to 200 bytes long
--- @error BAD_KEYS         a key not named as its template says
--- @error BAD_POSITIONS  not answered: a damaged position of the slowest subscription only stops the trim
--- @uses check_kinds trim_to_slowest
--- @complexity O(log S)
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
-- A subscription's position as `positions_key` holds it, "<id> <number>": the id and
-- number of the last message it acknowledged (0-0 and the number before its first
-- message when it acknowledged none). Nil when it has none; nil and an error reply when
-- the field holds something else.
local function position_of(positions_key, name)
  local held = redis.call('HGET', positions_key, name)
  if not held then
    return nil
  end
  local at_id, at_number = string.match(held, '^(%d+%-%d+) (%d+)$')
  if not at_id or not safe_integer(at_number, 0, 9007199254740991) then
    return nil, redis.error_reply('BAD_POSITIONS ' .. shown(positions_key) .. ' holds '
      .. shown(held) .. ' for ' .. shown(name) .. ', not "<id> <number>"')
  end
  return {id = at_id, number = tonumber(at_number)}
end
-- Reads the topic's stream and sorted sets once, so that a key of another type fails
-- with WRONGTYPE before anything is written (`positions` and `seq` are read by
-- position_of and last_number).
local function check_kinds(stream_key, subs_key, cursors_key)
  redis.call('XLEN', stream_key)
  redis.call('ZCARD', subs_key)
  redis.call('ZCARD', cursors_key)
end
-- Trims the stream to what the slowest subscription still needs: the messages after its
-- position (all of them, when there is no subscription), at most 1000 a call, whole
-- stream nodes at a time (`~`), so a node's worth more may stay.
local function trim_to_slowest(stream_key, cursors_key, positions_key)
  local slowest = redis.call('ZRANGE', cursors_key, 0, 0)[1]
  if not slowest then
    redis.call('XTRIM', stream_key, 'MAXLEN', '~', 0, 'LIMIT', 1000)
    return
  end
  local at = position_of(positions_key, slowest)
  if at then
    redis.call('XTRIM', stream_key, 'MINID', '~', at.id, 'LIMIT', 1000)
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local stream = KEYS[1]
local seq = KEYS[2]
local subs = KEYS[3]
local cursors = KEYS[4]
local positions = KEYS[5]
local subscription = ARGV[1]
if #subscription < 1 or #subscription > 200 then
  return redis.error_reply('BAD_SUBSCRIPTION must be from 1 to 200 bytes long, got ' .. #subscription .. ' bytes')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(stream, '^(.+):stream$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:stream, got ' .. shown(stream))
end
if seq ~= tag_of_keys .. ':seq' or subs ~= tag_of_keys .. ':subs' or cursors ~= tag_of_keys .. ':cursors' or
    positions ~= tag_of_keys .. ':positions' then
  for i, each in ipairs({ ':seq', ':subs', ':cursors', ':positions' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in stream, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- Every key's kind first: a key of another type fails before anything is written.
check_kinds(stream, subs, cursors)
redis.call('HLEN', positions)
redis.call('GET', seq)
local existed = redis.call('ZREM', subs, subscription)
redis.call('ZREM', cursors, subscription)
redis.call('HDEL', positions, subscription)
trim_to_slowest(stream, cursors, positions)
return existed
