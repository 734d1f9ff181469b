--- Acknowledges the messages up to one the subscription read: true, or false when it had already.
---
--- Beyond the books: the subscription's position moves to message `id` (its `number`,
--- as `poll.lua` answered it), and its lease is renewed. Then the stream is trimmed to
--- what the slowest live subscription still needs (`XTRIM MINID ~`, at most 1000 messages
--- per call, whole stream nodes at a time: a few more are kept), after dropping up to 10
--- subscriptions whose lease ran out. An ack of a message at or before the position
--- moves nothing (false), but still trims: acks may come twice.
--- @key stream stream {<name>}:stream        the messages: id -> n <number>, m <payload>
--- @key seq string {<name>}:seq              the last message number handed out
--- @key subs zset {<name>}:subs              subscription -> its lease deadline (ms, server clock)
--- @key cursors zset {<name>}:cursors        subscription -> the number of the last message it acknowledged
--- @key positions hash {<name>}:positions    subscription -> "<id> <number>" of the last message it acknowledged
--- @arg subscription string len:1..=200  the subscription's name
--- @arg lease ms 1..=10^15-1              its lease from now
--- @arg id string len:3..=41             the id of the last message handled
--- @arg number uint 1..=2^53-2           its number
--- @return bool                          1 when the position moved; 0 when it was there already
--- @error BAD_ARGS not 5 keys and 4 arguments
--- @error BAD_SUBSCRIPTION not from 1 to 200 bytes long
--- @error BAD_LEASE        not whole milliseconds within its range
--- @error NOT_SUBSCRIBED  no live subscription of that name
--- @error BAD_ID          not from 3 to 41 bytes long, or no message with `number` the stream could hold
--- @error BAD_NUMBER      not an integer within its range
--- @error BAD_KEYS        a key not named as its template says
--- @error BAD_SEQ        `seq` holds something other than a message count
--- @error BAD_POSITIONS  `positions` holds something other than "<id> <number>" for the subscription
--- @uses check_kinds position_of last_number drop_lapsed_subscriptions trim_to_slowest now_ms shown
--- @clock server
--- @complexity O(log S + 1000)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and reliable_topic/_shared.lua of the scripts folder).
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
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
-- Drops at most `most` members of zset `key` whose deadline is `now` or earlier (the
-- earliest first), but `keep` when given, and returns them, for the caller to drop what
-- goes with them.
local function drop_lapsed(key, now, most, keep)
  local lapsed = redis.call('ZRANGE', key, '-inf', now, 'BYSCORE', 'LIMIT', 0, most)
  for i = #lapsed, 1, -1 do
    if lapsed[i] == keep then
      table.remove(lapsed, i)
    end
  end
  if #lapsed > 0 then
    redis.call('ZREM', key, unpack(lapsed))
  end
  return lapsed
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
-- Drops up to 10 subscriptions whose lease ran out by `now` (but `keep`), with their
-- cursors and positions, so that they no longer hold the stream back: how many it dropped.
local function drop_lapsed_subscriptions(subs_key, cursors_key, positions_key, now, keep)
  local lapsed = drop_lapsed(subs_key, now, 10, keep)
  if #lapsed > 0 then
    redis.call('ZREM', cursors_key, unpack(lapsed))
    redis.call('HDEL', positions_key, unpack(lapsed))
  end
  return #lapsed
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
if #KEYS ~= 5 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
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
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
local id = ARGV[3]
if #id < 3 or #id > 41 then
  return redis.error_reply('BAD_ID must be from 3 to 41 bytes long, got ' .. #id .. ' bytes')
end
local number = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not number or number > 9007199254740990 then
  return redis.error_reply('BAD_NUMBER must be an integer from 1 to 9007199254740990, got ' .. shown(ARGV[4]))
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
local position, err = position_of(positions, subscription)
if err then
  return err
end
local last
last, err = last_number(seq)
if err then
  return err
end
check_kinds(stream, subs, cursors)
local now = now_ms()
if not position or not redis.call('ZSCORE', subs, subscription) then
  return redis.error_reply('NOT_SUBSCRIBED ' .. shown(subscription) .. ' is no live subscription: subscribe again')
end
local ms, sequence = string.match(id, '^(%d+)%-(%d+)$')
if not ms or #ms > 16 or #sequence > 16 or number > last then
  return redis.error_reply('BAD_ID ' .. shown(id) .. ' with number ' .. number .. ' is no message of the stream')
end

drop_lapsed_subscriptions(subs, cursors, positions, now, subscription)
redis.call('ZADD', subs, now + lease, subscription)
local moved = 0
if number > position.number then
  redis.call('HSET', positions, subscription, id .. ' ' .. number)
  redis.call('ZADD', cursors, number, subscription)
  moved = 1
end
-- The slowest live subscription's position bounds what the stream keeps; an ack that
-- moves nothing trims too, after a slower subscription went away.
trim_to_slowest(stream, cursors, positions)
return moved
