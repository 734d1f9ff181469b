--- Checks a user's session token, with the book's three answers; slides its expiry, and can return its data.
---
--- 《Redis 应用实例》 chapter 19 (`Session.validate`): `TOKEN_NOT_EXISTS` when the user has
--- no live session, `TOKEN_CORRECT` when the token is one of them, `TOKEN_INCORRECT` when
--- the user has sessions but this token is none of them. The book stores the token and
--- compares it with Python's `==`, whose time tells how many leading characters of a
--- guess were right. Here Redis keeps only the token's SHA-1 (see create.lua), for the
--- data at rest, and looks that up: a lookup compares digests, which give back no token,
--- however long it takes. (Lua's `==` would not leak either: it compares two interned
--- strings by address.) With `slide` = 1 a correct token's session lasts its ttl again
--- from now (the book's never does). With `data` = 1 a correct token's reply also carries
--- the session's data. Expired sessions of the user are forgotten first (see create.lua).
--- @key sessions zset {<namespace>:<uid>}:sessions  session id -> deadline (ms, server clock)
--- @key records hash {<namespace>:<uid>}:records    `t:<id>` -> the session's ttl (ms); `d:<id>` -> its data
--- @arg token string non-empty   the token to check
--- @arg slide bool            1: a correct token's session lasts its ttl again from now
--- @arg data bool             1: a correct token's reply carries the session's data
--- @return (string, uint, [(string, bytes)])  the answer, the milliseconds the session has left (0
---                            unless correct), and its data as (name, value) rows when `data` = 1 and the
---                            token is correct (none otherwise)
--- @error BAD_ARGS            not 2 keys and 3 arguments
--- @error BAD_TOKEN           empty
--- @error BAD_SLIDE           not 1 or 0
--- @error BAD_DATA            not 1 or 0
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_RECORD          the session's record in `records` was not written by these scripts
--- @error BAD_SESSIONS        `sessions` holds a deadline another client wrote, not whole ms; nothing was written
--- @uses bad_last sweep outlive_sessions safe_integer shown bad_deadline
--- @clock server
--- @complexity O(E + log N + F), E = sessions expired (at most 1000), N = the user's sessions, F = the data's fields
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
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local slide = ARGV[2] == '1'
if not slide and ARGV[2] ~= '0' then
  return redis.error_reply('BAD_SLIDE must be 1 or 0, got ' .. shown(ARGV[2]))
end
local data = ARGV[3] == '1'
if not data and ARGV[3] ~= '0' then
  return redis.error_reply('BAD_DATA must be 1 or 0, got ' .. shown(ARGV[3]))
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
local deadline = redis.call('ZSCORE', sessions, id)
-- Everything that can be refused is read before the first write.
local bad = bad_deadline(id, deadline) or bad_last(sessions)
if bad then
  return bad
end
deadline = tonumber(deadline)
local correct = deadline and deadline > now
local fields = {}
local reply = { 'TOKEN_CORRECT', 0, fields }
if correct then
  local ttl = redis.call('HGET', records, 't:' .. id)
  if not (ttl and safe_integer(ttl, 1, 999999999999999)) then
    return redis.error_reply('BAD_RECORD session ' .. id .. ' has the ttl ' .. shown(ttl or '')
      .. ', not whole ms from 1 to 10^15 - 1')
  end
  ttl = tonumber(ttl)
  if slide then
    deadline = now + ttl
  end
  -- Whole ms below 2^53: an integer reply.
  reply[2] = deadline - now
  local packed = data and redis.call('HGET', records, 'd:' .. id)
  if packed then
    local ok, map = pcall(cmsgpack.unpack, packed)
    if not ok or type(map) ~= 'table' then
      return redis.error_reply('BAD_RECORD session ' .. id .. ' has data that is not a MessagePack map')
    end
    for name, value in pairs(map) do
      fields[#fields + 1] = { name, value }
    end
  end
end

sweep(sessions, records, now)
if not correct then
  reply[1] = redis.call('ZCARD', sessions) > 0 and 'TOKEN_INCORRECT' or 'TOKEN_NOT_EXISTS'
elseif slide then
  redis.call('ZADD', sessions, deadline, id)
  outlive_sessions(sessions, records)
end
return reply
