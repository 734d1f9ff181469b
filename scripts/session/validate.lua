--- Checks a user's session token, with the book's three answers; slides its expiry, and can return its data.
---
--- 《Redis 应用实例》 chapter 19 (`Session.validate`): `TOKEN_NOT_EXISTS` when the user has
--- no live session, `TOKEN_CORRECT` when the token is one of them, `TOKEN_INCORRECT` when
--- the user has sessions but this token is none of them. The book compares the stored
--- token with `==`, whose time tells an attacker how many leading characters were right;
--- here the token is never compared: its SHA-1 is looked up, so timing tells nothing about
--- a stored token. With `slide` = 1 a correct token's session lasts its ttl again from now
--- (the book's never does). With `data` = 1 a correct token's reply also carries the
--- session's data. Expired sessions of the user are forgotten first (see create.lua).
--- Reply: the answer, the milliseconds the session has left (0 unless correct), then, with
--- `data` = 1, the data's names and values: name, value, name, value, ...
--- @key sessions zset         session id -> deadline (ms, server clock)
--- @key records hash          `t:<id>` -> the session's ttl (ms); `d:<id>` -> its data
--- @arg token string non-empty   the token to check
--- @arg slide bool            1: a correct token's session lasts its ttl again from now
--- @arg data bool             1: a correct token's reply carries the session's data
--- @return [bytes]            answer, ms left, then the data's name, value pairs
--- @error BAD_ARGS            not 2 keys and 3 arguments
--- @error BAD_TOKEN           empty
--- @error BAD_SLIDE           not 1 or 0
--- @error BAD_DATA            not 1 or 0
--- @error BAD_RECORD          the session's record in `records` was not written by these scripts
--- @clock server
--- @complexity O(E + log N + F), E = sessions expired (at most 1000), N = the user's sessions, F = the data's fields
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
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
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local sessions = KEYS[1]
local records = KEYS[2]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
local slide = ARGV[2]
if slide ~= '1' and slide ~= '0' then
  return redis.error_reply('BAD_SLIDE slide must be 1 or 0, got ' .. shown(slide))
end
slide = slide == '1'
local data = ARGV[3]
if data ~= '1' and data ~= '0' then
  return redis.error_reply('BAD_DATA data must be 1 or 0, got ' .. shown(data))
end
data = data == '1'
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', sessions)
redis.call('HLEN', records)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local id = redis.sha1hex(token)
local deadline = tonumber(redis.call('ZSCORE', sessions, id))
local correct = deadline and deadline > now
local reply = { 'TOKEN_CORRECT', '0' }
-- Everything that can be refused is read before the first write.
if correct then
  local ttl = redis.call('HGET', records, 't:' .. id)
  if not (ttl and integer(ttl, '1', '999999999999999')) then
    return redis.error_reply('BAD_RECORD session ' .. id .. ' has the ttl ' .. shown(ttl or '')
      .. ', not whole ms from 1 to 10^15 - 1')
  end
  ttl = tonumber(ttl)
  if slide then
    deadline = now + ttl
  end
  reply[2] = string.format('%d', deadline - now)
  local packed = data and redis.call('HGET', records, 'd:' .. id)
  if packed then
    local ok, fields = pcall(cmsgpack.unpack, packed)
    if not ok or type(fields) ~= 'table' then
      return redis.error_reply('BAD_RECORD session ' .. id .. ' has data that is not a MessagePack map')
    end
    for name, value in pairs(fields) do
      reply[#reply + 1] = name
      reply[#reply + 1] = value
    end
  end
end

-- Ends the sessions `ids`: out of the index, and their records with them.
local function forget(ids)
  local fields = {}
  for _, gone in ipairs(ids) do
    fields[#fields + 1] = 't:' .. gone
    fields[#fields + 1] = 'd:' .. gone
  end
  for i = 1, #ids, 1000 do
    redis.call('ZREM', sessions, unpack(ids, i, math.min(i + 999, #ids)))
  end
  for i = 1, #fields, 1000 do
    redis.call('HDEL', records, unpack(fields, i, math.min(i + 999, #fields)))
  end
end

forget(redis.call('ZRANGEBYSCORE', sessions, '-inf', now, 'LIMIT', 0, 1000))
if not correct then
  reply[1] = redis.call('ZCARD', sessions) > 0 and 'TOKEN_INCORRECT' or 'TOKEN_NOT_EXISTS'
elseif slide then
  redis.call('ZADD', sessions, deadline, id)
  -- Both keys live as long as the session that lasts longest.
  local last = redis.call('ZRANGE', sessions, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', sessions, last[2])
  redis.call('PEXPIREAT', records, last[2])
end
return reply
