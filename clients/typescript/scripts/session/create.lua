--- Starts a session of one user: its token goes in the user's index, which never holds more than `cap` sessions.
---
--- 《Redis 应用实例》 chapter 19 keeps one token per user (`SET User:<uid>:token`), so a
--- second login ends the first. This family keeps several sessions per user, as web apps
--- need (a phone, a laptop), in two keys of the user's hash slot:
--- `sessions`, session id -> deadline, and `records`, `t:<id>` -> the session's ttl and
--- `d:<id>` -> its data (a MessagePack map, written by set.lua and unset.lua).
--- A session's id is the SHA-1 of its token (40 hex digits), and Redis keeps only ids: a
--- copy of the data (an RDB file, a replica) holds no token to log in with. A token is
--- looked up by its id, so a lookup compares digests, which give back no token.
--- The caller makes the token: at least 128 random bits (the Rust API uses 256).
---
--- Expired sessions leave the index with their records first (all of them: the index is
--- never longer than the largest cap, 1000). Then, if the user already has `cap` sessions,
--- those that would expire soonest are ended (with one ttl: the least recently used),
--- so the cap holds at every instant. Both keys expire when the last session does, so a
--- user who never comes back leaves nothing behind and no keyspace notification is needed.
--- @key sessions zset {<namespace>:<uid>}:sessions  session id -> deadline (ms, server clock)
--- @key records hash {<namespace>:<uid>}:records    `t:<id>` -> the session's ttl (ms); `d:<id>` -> its data
--- @arg token string len:16..   the new session's token: 16 bytes at least, to hold its 128 random bits
--- @arg ttl ms 1..=10^15-1    how long the session lasts (again from each sliding validation)
--- @arg cap uint 1..=1000     the most sessions the user may have
--- @return [string]           the ids of the sessions ended to make room, soonest to expire first
--- @error BAD_ARGS            not 2 keys and 3 arguments
--- @error BAD_TOKEN           shorter than 16 bytes
--- @error BAD_TTL             not whole milliseconds within its range
--- @error BAD_CAP             not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error TOKEN_TAKEN         a live session already has this token
--- @error BAD_SESSIONS        `sessions` holds a deadline another client wrote, not whole ms; nothing was written
--- @uses bad_last sweep forget outlive_sessions
--- @default ttl 2592000000       SessionStore::new: 30 days
--- @default cap 10               SessionStore::new: 10 sessions a user
--- @clock server
--- @complexity O(E + log N), E = sessions expired or ended (at most 1000), N = the user's sessions
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; session/_shared.lua of the scripts folder).
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
-- Reads key name `s` as texts[1], a value, texts[2], a value, ..., texts[#texts]: each value
-- at least one byte and as short as it can be, a first value that is a hash tag group
-- (`group` true) up to the `}` of its hash tag at least. Returns the values, or nil when `s`
-- is not of that form.
local function key_split(s, texts, group)
  if string.sub(s, 1, #texts[1]) ~= texts[1] then
    return nil
  end
  local values, at = {}, #texts[1] + 1
  for n = 2, #texts do
    local least = at
    if n == 2 and group then
      local open = string.find(s, '{', at, true)
      least = open and string.find(s, '}', open + 1, true)
      if not least or least == open + 1 then
        return nil
      end
    end
    local stop = #s - #texts[n]
    if n < #texts then
      stop = (string.find(s, texts[n], least + 1, true) or 0) - 1
    end
    if stop < least or string.sub(s, stop + 1, stop + #texts[n]) ~= texts[n] then
      return nil
    end
    values[n - 1] = string.sub(s, at, stop)
    at = stop + #texts[n] + 1
  end
  return values
end
-- Whether group content `c` is made of values as `texts` says (see key_split), with its hash
-- tag, when it holds one, inside one value: read with the tag as one byte that no text
-- holds, as a tag across two values would hash by text that neither holds.
local function key_content_fits(c, texts)
  local open = string.find(c, '{', 1, true)
  local close = open and string.find(c, '}', open + 1, true)
  if close and close > open + 1 then
    c = string.sub(c, 1, open - 1) .. '\0' .. string.sub(c, close + 1)
  end
  return key_split(c, texts) ~= nil
end
-- Whether hash tag group `g` is made of values as `texts` says (see key_content_fits): the
-- text between its braces, or `g` itself when it holds a hash tag.
local function key_group_fits(g, texts)
  local inner = string.match(g, '^{([^}]+)}$')
  return (inner ~= nil and key_split(inner, texts) ~= nil) or key_content_fits(g, texts)
end
-- Ends the sessions `ids`: out of the index, and their records with them, 1000 at a time
-- (the most arguments one command is given here).
local function forget(sessions_set, records_hash, ids)
  local fields = {}
  for _, gone in ipairs(ids) do
    fields[#fields + 1] = 't:' .. gone
    fields[#fields + 1] = 'd:' .. gone
  end
  for i = 1, #ids, 1000 do
    redis.call('ZREM', sessions_set, unpack(ids, i, math.min(i + 999, #ids)))
  end
  for i = 1, #fields, 1000 do
    redis.call('HDEL', records_hash, unpack(fields, i, math.min(i + 999, #fields)))
  end
end
-- Ends up to 1000 sessions that expired by `now`: each call sweeps a bounded share.
local function sweep(sessions_set, records_hash, now)
  forget(sessions_set, records_hash, redis.call('ZRANGEBYSCORE', sessions_set, '-inf', now, 'LIMIT', 0, 1000))
end
-- Both keys live as long as the session that lasts longest, if one is left.
local function outlive_sessions(sessions_set, records_hash)
  local last = redis.call('ZRANGE', sessions_set, -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIREAT', sessions_set, last[2])
    redis.call('PEXPIREAT', records_hash, last[2])
  end
end
-- An error reply when `deadline` (a score of the sessions set, as Redis spells it) is
-- not whole ms, as these scripts write deadlines; nothing when it is, or when it is nil.
local function bad_deadline(id, deadline)
  if deadline and not safe_integer(deadline, 0, 9007199254740991) then
    return redis.error_reply('BAD_SESSIONS session ' .. shown(id) .. ' lasts until ' .. shown(deadline)
      .. ', not a time in whole ms')
  end
end
-- The check, before the first write, of the deadline that outlive_sessions gives both
-- keys: the latest one, which the call's own deadlines (whole ms) can only raise.
local function bad_last(sessions_set)
  local last = redis.call('ZRANGE', sessions_set, -1, -1, 'WITHSCORES')
  return bad_deadline(last[1], last[2])
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local sessions = KEYS[1]
local records = KEYS[2]
local token = ARGV[1]
if #token < 16 then
  return redis.error_reply('BAD_TOKEN must be 16 bytes long at least, got ' .. #token .. ' bytes')
end
local ttl = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
local cap = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not cap or cap > 1000 then
  return redis.error_reply('BAD_CAP must be an integer from 1 to 1000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(sessions, '^(.+):sessions$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') or
    not key_group_fits(tag_of_keys, { '', ':', '' }) then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>:<uid>}:sessions, got ' .. shown(sessions))
end
if records ~= tag_of_keys .. ':records' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>:<uid>}:records with the hash tag as in sessions, got ' .. shown(records))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', sessions)
redis.call('HLEN', records)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local id = redis.sha1hex(token)
local deadline = tonumber(redis.call('ZSCORE', sessions, id))
if deadline and deadline > now then
  return redis.error_reply('TOKEN_TAKEN a live session already has this token; make a new random one')
end
local bad = bad_last(sessions)
if bad then
  return bad
end

sweep(sessions, records, now)
local evicted = {}
local excess = redis.call('ZCARD', sessions) + 1 - cap
if excess > 0 then
  evicted = redis.call('ZRANGE', sessions, 0, math.min(excess, 1000) - 1)
  forget(sessions, records, evicted)
end
redis.call('ZADD', sessions, now + ttl, id)
redis.call('HSET', records, 't:' .. id, ttl)
outlive_sessions(sessions, records)
return evicted
