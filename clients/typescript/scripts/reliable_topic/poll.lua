--- Reads the messages after the subscription's last acknowledged one: (lost, wake id, messages).
---
--- Beyond the books: at least once. A poll answers up to `count` messages after the last
--- one the subscription acknowledged, so messages a crashed subscriber had read but not
--- acknowledged come again to whoever polls next with its name. `lost` is how many
--- messages after that one the stream no longer holds (the cap trimmed them while the
--- subscription read nothing): told, never skipped silently. With no message, wait with
--- `XREAD BLOCK <ms> STREAMS <stream> <wake id>` and poll again; poll (or ack) within
--- the lease to keep the subscription. A subscription unknown, or dropped after its lease
--- ran out, answers NOT_SUBSCRIBED: subscribe again. A poll answers at most 250 messages,
--- so that one call stays short (about a millisecond of server time at 1 kB each): a
--- subscriber behind by more polls again after its ack.
--- @key stream stream {<name>}:stream        the messages: id -> n <number>, m <payload>
--- @key seq string {<name>}:seq              the last message number handed out
--- @key subs zset {<name>}:subs              subscription -> its lease deadline (ms, server clock)
--- @key cursors zset {<name>}:cursors        subscription -> the number of the last message it acknowledged
--- @key positions hash {<name>}:positions    subscription -> "<id> <number>" of the last message it acknowledged
--- @arg subscription string len:1..=200  the subscription's name
--- @arg lease ms 1..=10^15-1              its lease from now
--- @arg count uint 1..=250               the most messages answered
--- @return (uint, string, [(string, uint, bytes)])  the messages lost; the stream's newest id, to wait from;
---   per message, oldest first: its id, number and payload
--- @error BAD_ARGS not 5 keys and 3 arguments
--- @error BAD_SUBSCRIPTION not from 1 to 200 bytes long
--- @error BAD_LEASE        not whole milliseconds within its range
--- @error BAD_COUNT        not an integer within its range
--- @error BAD_KEYS         a key not named as its template says
--- @error NOT_SUBSCRIBED  no live subscription of that name
--- @error BAD_SEQ        `seq` holds something other than a message count
--- @error BAD_POSITIONS  `positions` holds something other than "<id> <number>" for the subscription
--- @error BAD_STREAM     `stream` holds an entry these scripts did not write
--- @uses check_kinds position_of last_number drop_lapsed_subscriptions trim_to_slowest now_ms safe_integer shown
--- @clock server
--- @complexity O(log S + count)
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
if #KEYS ~= 5 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
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
local count = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not count or count > 250 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 250, got ' .. shown(ARGV[3]))
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
local deadline = redis.call('ZSCORE', subs, subscription)
if not position or not deadline then
  return redis.error_reply('NOT_SUBSCRIBED ' .. shown(subscription) .. ' is no live subscription: subscribe again')
end

local entries = redis.call('XRANGE', stream, '(' .. position.id, '+', 'COUNT', count)
local messages = {}
for i, entry in ipairs(entries) do
  local fields = entry[2]
  local number = fields[1] == 'n' and fields[3] == 'm' and #fields == 4 and safe_integer(fields[2], 1, last)
  if not number or (i > 1 and number ~= messages[i - 1][2] + 1) or number <= position.number then
    return redis.error_reply('BAD_STREAM ' .. shown(stream) .. ' holds entry ' .. entry[1]
      .. ', not one of these scripts')
  end
  messages[i] = {entry[1], number, fields[4]}
end
local lost = last - position.number
if messages[1] then
  lost = messages[1][2] - position.number - 1
end
local newest = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]

if drop_lapsed_subscriptions(subs, cursors, positions, now, subscription) > 0 then
  trim_to_slowest(stream, cursors, positions)
end
redis.call('ZADD', subs, now + lease, subscription)
return {lost, newest and newest[1] or '0-0', messages}
