--- Helpers of the reliable_topic scripts, each defined here once. `redis-patterns fix`
--- pastes the ones a script names in `@uses` into it, and the build refuses a copy that
--- differs from this file. Keys come in as parameters, named apart from the scripts' own
--- locals.
-- luacheck: ignore 211
-- luacheck: read globals drop_lapsed safe_integer shown

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
