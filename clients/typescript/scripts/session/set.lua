--- Sets fields of a session's data, if the token is correct; the data ends with the session.
---
--- Beyond the book, whose sessions hold no data. A session's data lives in `records` as
--- one MessagePack map under `d:<id>`, beside the session's ttl, so that ending or
--- evicting a session (create.lua, end.lua), or its expiry, takes its data with it in the
--- same step, and "log out everywhere" is deleting two keys. The data is bounded: at most
--- 256 fields, and at most 64 KiB of names and values together (each call reads and
--- rewrites all of it, and reading a 1 MiB value into Lua alone takes over a millisecond).
--- Expired sessions of the user are forgotten first (see create.lua). Setting data does not
--- slide the expiry.
--- @key sessions zset {<namespace>:<uid>}:sessions  session id -> deadline (ms, server clock)
--- @key records hash {<namespace>:<uid>}:records    `t:<id>` -> the session's ttl (ms); `d:<id>` -> its data
--- @arg token string non-empty   the session's token
--- @arg fields bytes... 2..=200   name, value, name, value, ...: from 1 to 100 pairs
--- @return string             `TOKEN_CORRECT` (fields set), `TOKEN_INCORRECT` or `TOKEN_NOT_EXISTS` (nothing is set)
--- @error BAD_ARGS            not 2 keys and from 3 to 201 arguments
--- @error BAD_TOKEN           empty
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_FIELDS          a name without a value: the names and values are an odd number
--- @error DATA_TOO_BIG        the data would have more than 256 fields or 64 KiB of names and values
--- @error BAD_RECORD          the session's data in `records` was not written by these scripts
--- @uses sweep
--- @clock server
--- @complexity O(E + log N + F), E = sessions expired (at most 1000), N = the user's sessions, F = the data's fields
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; session/_shared.lua of the scripts folder).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV < 3 or #ARGV > 201 then
  return redis.error_reply('BAD_ARGS expected 2 keys and from 3 to 201 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local sessions = KEYS[1]
local records = KEYS[2]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
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
if #ARGV % 2 ~= 1 then
  return redis.error_reply('BAD_FIELDS ' .. (#ARGV - 1) .. ' names and values: a name has no value')
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', sessions)
redis.call('HLEN', records)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local id = redis.sha1hex(token)
local deadline = tonumber(redis.call('ZSCORE', sessions, id))
local correct = deadline and deadline > now
local packed
-- Everything that can be refused is read and checked before the first write.
if correct then
  local data = {}
  local stored = redis.call('HGET', records, 'd:' .. id)
  if stored then
    local ok, unpacked = pcall(cmsgpack.unpack, stored)
    if not ok or type(unpacked) ~= 'table' then
      return redis.error_reply('BAD_RECORD session ' .. id .. ' has data that is not a MessagePack map')
    end
    data = unpacked
  end
  for i = 2, #ARGV, 2 do
    data[ARGV[i]] = ARGV[i + 1]
  end
  local count, bytes = 0, 0
  for name, value in pairs(data) do
    count = count + 1
    bytes = bytes + #name + #value
  end
  if count > 256 or bytes > 65536 then
    return redis.error_reply('DATA_TOO_BIG the data would have ' .. count .. ' fields and ' .. bytes
      .. ' bytes of names and values; at most 256 and 65536')
  end
  packed = cmsgpack.pack(data)
end

sweep(sessions, records, now)
if not correct then
  return redis.call('ZCARD', sessions) > 0 and 'TOKEN_INCORRECT' or 'TOKEN_NOT_EXISTS'
end
redis.call('HSET', records, 'd:' .. id, packed)
return 'TOKEN_CORRECT'
