--- Helpers that scripts of several families share, each defined here once.
--- `redis-patterns fix` pastes the ones a script names in `@uses` (and those they call)
--- into it, and the build refuses a copy that differs from this file. Keys come in as
--- parameters, named apart from the scripts' own locals.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- The hour whose totals a zset of hourly statistics holds, as its `start` key keeps it:
-- whole seconds, a multiple of 3600, or nil when none is kept yet; nil and an error
-- reply when the key holds something else.
local function held_hour(start_key)
  local held = redis.call('GET', start_key)
  if held and not (safe_integer(held, 0, 999999999999) and tonumber(held) % 3600 == 0) then
    return nil, redis.error_reply('BAD_START ' .. shown(start_key) .. ' holds ' .. shown(held)
      .. ', not the start of an hour in whole seconds')
  end
  return held
end

-- Moves hourly statistics on to the hour that starts at `hour` (whole seconds, as text):
-- when `held` (as held_hour read it) is an earlier hour, the current zset becomes the last
-- hour's, and the hour before last goes.
local function rotate_hour(current_key, last_key, start_key, pstart_key, held, hour)
  if not held then
    redis.call('SET', start_key, hour)
  elseif tonumber(held) < tonumber(hour) then
    -- UNLINK: the hour before last may be big; it is freed in the background.
    redis.call('UNLINK', last_key)
    if redis.call('EXISTS', current_key) == 1 then
      redis.call('RENAME', current_key, last_key)
    end
    redis.call('SET', pstart_key, held)
    redis.call('SET', start_key, hour)
  end
end

-- The last id of wake stream `wake_key`, '0-0' when it has none. A script that answers
-- "not yet" returns it, and the waiter blocks with XREAD from it until wake_waiters adds
-- an entry. Reads only: call it before the first write (a key of another type is
-- refused with WRONGTYPE there).
local function wake_id(wake_key)
  local last = redis.call('XREVRANGE', wake_key, '+', '-', 'COUNT', 1)[1]
  return last and last[1] or '0-0'
end

-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
end


-- Rings bell `bell_key` (a list) until it holds `count` rings (at most 1,000), `rings` (its
-- LLEN, read before the first write) being there already: each ring wakes the one waiter
-- blocked on it the longest (BLPOP), which runs its script again, and the others keep
-- blocking. With nobody blocked a ring stays until the next waiter blocks, so a ring
-- between a "not yet" and its block is not missed, for `ms`: no longer than a waiter
-- blocks before it runs again anyway.
local function ring_bell(bell_key, rings, count, ms)
  local more = {}
  for i = 1, math.min(count, 1000) - rings do
    more[i] = 1
  end
  if #more > 0 then
    redis.call('RPUSH', bell_key, unpack(more))
    redis.call('PEXPIRE', bell_key, ms)
  end
end
-- The server's clock in whole milliseconds.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end


-- The milliseconds from `now` to `deadline` (a zset score, maybe one another client
-- wrote), from 0 to a minute: what a waiter may block at most.
local function ms_until(deadline, now)
  local ms = math.floor(tonumber(deadline) - now)
  if ms ~= ms or ms < 0 then
    return 0
  end
  return math.min(ms, 60000)
end

-- The earliest deadline in zset `key` after `now`, nil when none.
local function next_deadline(key, now)
  return redis.call('ZRANGE', key, '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2]
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

-- Lets zset `key` of deadlines (and `also_key`, when given) go once the latest deadline it
-- holds has passed, so that holds nobody releases leave no keys behind.
local function expire_after_last(key, also_key, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if not last then
    return
  end
  local ms = math.max(math.floor(tonumber(last) - now) + 1, 1)
  -- A deadline past every lease these scripts grant (another client's `inf`) keeps the key.
  if ms <= 2000000000000000 then
    redis.call('PEXPIRE', key, ms)
    if also_key then
      redis.call('PEXPIRE', also_key, ms)
    end
  end
end
