--- Takes the write hold under `token` for `lease` and returns a fencing token, or says what to wait on.
---
--- Beyond the book. One token holds the lock for writing, while no token holds it for
--- reading. A token that asks again counts one more hold (reentrancy per token; each
--- `release_write` gives one back), keeps its fencing token and its lease runs `lease`
--- from now. Each new write hold takes the next number of the `fence` counter, which never
--- goes back, as `fenced_lock/acquire` does. While the call is refused, the token holds a
--- place in `intents` for `place_lease` (renewed by each call), and readers that do not
--- prefer readers wait behind it, so a stream of readers cannot starve the writer; an
--- empty `place_lease` asks once without a place. A token that holds a read hold is
--- refused (upgrading could deadlock two such tokens): release it, or take the write hold
--- first and `downgrade`. Up to `limit` lapsed read holds and `limit` lapsed writer places
--- are dropped first (the earliest first); dropping any wakes the waiters.
--- @key writer hash {<name>}:writer       the write hold: `t` token, `n` count, `f` fence; expires with its lease
--- @key readers zset {<name>}:readers     read holder token -> lease deadline (ms, server clock)
--- @key read_holds hash {<name>}:read_holds  read holder token -> how many holds it took
--- @key intents zset {<name>}:intents     waiting writer token -> place deadline (ms, server clock)
--- @key fence string {<name>}:fence       the counter the fencing tokens come from; never deleted
--- @key wake stream {<name>}:wake         the wake stream: an entry each time the lock frees
--- @arg token string hex:32       the holder's 128 random bits; the same token for each hold of one holder
--- @arg lease ms 1..=10^15-1      how long the write hold lasts from now
--- @arg place_lease ms? 1..=10^15-1  how long the waiting writer's place lasts; empty: wait without one
--- @arg limit uint 1..=1000       the most lapsed read holds, and writer places, dropped first
--- @return (uint, string, uint)   the write hold's fencing token (0: not granted), then the wake stream's
---   last id and the most ms to block on it before calling again (both for a 0)
--- @error BAD_ARGS                not 6 keys and 4 arguments
--- @error BAD_TOKEN               not 32 hex digits
--- @error BAD_LEASE               not whole milliseconds within its range
--- @error BAD_PLACE_LEASE         not whole milliseconds within its range (or empty)
--- @error BAD_LIMIT               not an integer within its range
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_WRITER              `writer` holds a field these scripts never write, or a value they did not write
--- @error BAD_FENCE               `fence` holds something other than a whole number from 0 to 2^53 - 2
--- @error HOLDS_READ              `token` holds a read hold: release it first
--- @uses wake_id wake_waiters now_ms ms_until next_deadline drop_lapsed expire_after_last write_hold safe_integer shown
--- @clock server
--- @complexity O(M × log R), R = the read holders and waiting writers, M = `limit`
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and rw_lock/_shared.lua of the scripts folder).
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
-- The write hold in hash `writer_key` (`t` the holder's token, `n` how many times it took
-- the hold, `f` its fencing token; the key's expiry is the lease), read and checked before
-- any write: the token, count and fence, or nothing when the lock has no writer; or nil,
-- nil, nil and an error reply when the hash holds what these scripts never write.
local function write_hold(writer_key)
  local hold = redis.call('HMGET', writer_key, 't', 'n', 'f')
  local fields = redis.call('HLEN', writer_key)
  if fields == 0 then
    return nil
  end
  local t, n, f = hold[1], hold[2], hold[3]
  if fields ~= 3 or not (t and string.find(t, '^' .. string.rep('%x', 32) .. '$'))
      or not (n and safe_integer(n, 1, 9007199254740990))
      or not (f and safe_integer(f, 1, 9007199254740990)) then
    return nil, nil, nil, redis.error_reply('BAD_WRITER ' .. shown(writer_key)
      .. ' holds no write hold (fields t, n and f)')
  end
  return t, tonumber(n), tonumber(f)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 6 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 6 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local writer = KEYS[1]
local readers = KEYS[2]
local read_holds = KEYS[3]
local intents = KEYS[4]
local fence = KEYS[5]
local wake = KEYS[6]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
local place_lease = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if ARGV[3] ~= '' and (not place_lease or place_lease > 999999999999999) then
  return redis.error_reply(
      'BAD_PLACE_LEASE must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[3]))
end
local limit = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not limit or limit > 1000 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 1000, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(writer, '^(.+):writer$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:writer, got ' .. shown(writer))
end
if readers ~= tag_of_keys .. ':readers' or read_holds ~= tag_of_keys .. ':read_holds' or
    intents ~= tag_of_keys .. ':intents' or fence ~= tag_of_keys .. ':fence' or wake ~= tag_of_keys .. ':wake' then
  for i, each in ipairs({ ':readers', ':read_holds', ':intents', ':fence', ':wake' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in writer, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- Everything read and checked before the first write (WRONGTYPE included).
local id = wake_id(wake)
local writer_token, _, writer_fence, bad_writer = write_hold(writer)
if bad_writer then
  return bad_writer
end
local last = redis.call('GET', fence)
if last and not safe_integer(last, 0, 9007199254740990) then
  return redis.error_reply('BAD_FENCE the fence counter holds ' .. shown(last) .. ', not a token count')
end
redis.call('HLEN', read_holds)
redis.call('ZCARD', intents)
local now = now_ms()
local reading = redis.call('ZSCORE', readers, token)
if writer_token ~= token and reading and tonumber(reading) > now then
  return redis.error_reply('HOLDS_READ the token holds a read hold; release it before taking the write hold')
end

local dropped = drop_lapsed(readers, now, limit)
if #dropped > 0 then
  redis.call('HDEL', read_holds, unpack(dropped))
end
local lapsed_places = drop_lapsed(intents, now, limit)
if #dropped + #lapsed_places > 0 then
  wake_waiters(wake)
  id = wake_id(wake)
end

if writer_token == token then
  redis.call('HINCRBY', writer, 'n', 1)
  redis.call('PEXPIRE', writer, lease)
  redis.call('ZREM', intents, token)
  return {writer_fence, id, 0}
end

local wait_ms
if writer_token then
  wait_ms = ms_until(now + redis.call('PTTL', writer), now)
else
  local next_reader = next_deadline(readers, now)
  if next_reader then
    wait_ms = ms_until(next_reader, now)
  end
end
if wait_ms then
  if place_lease then
    redis.call('ZADD', intents, now + place_lease, token)
    expire_after_last(intents, nil, now)
    -- Call again in time to keep the place.
    wait_ms = math.min(wait_ms, math.floor(place_lease / 2))
  end
  return {0, id, wait_ms}
end

redis.call('ZREM', intents, token)
local fencing = redis.call('INCR', fence)
redis.call('HSET', writer, 't', token, 'n', 1, 'f', fencing)
redis.call('PEXPIRE', writer, lease)
return {fencing, id, 0}
