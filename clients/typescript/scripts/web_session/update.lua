--- Records a request of a logged-in user: the token's user and last-seen time, and the item viewed, in one step.
---
--- Redis in Action chapter 2 (`update_token`, listings 2.2 and 2.9): the token -> user
--- map, the tokens by last-seen time, the token's last `keep` items viewed, and every
--- item's view count (a negative score, so the most viewed item has rank 0), all written
--- together. The book sends up to five commands in five round trips, with no
--- transaction, so a reader (or the cleaner) can find a token in one index and not the
--- other. Times are the server's clock in ms. A token's last-seen time only grows: a
--- request in the same millisecond as the last one, or after the clock stepped back, moves
--- it 1 ms on, so the cleaner can tell that the token was refreshed.
--- @key login hash {<namespace>}:login            token -> user
--- @key recent zset {<namespace>}:recent          token -> last-seen time (ms)
--- @key viewed zset {<namespace>}:viewed:<token>  this token's items viewed -> when (ms)
--- @key views zset {<namespace>}:viewed           every item -> minus its views
--- @arg token string non-empty   the login token
--- @arg user bytes non-empty     the user the token belongs to (any bytes)
--- @arg item bytes            the item viewed (any bytes); empty for a request that views none
--- @arg keep uint 1..=1000    how many of the token's last items viewed to keep (the book's 25)
--- @return int                the token's last-seen time (ms)
--- @error BAD_ARGS            not 4 keys and 4 arguments
--- @error BAD_TOKEN           empty
--- @error BAD_USER            empty
--- @error BAD_KEEP            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_RECENT          `recent` holds a last-seen time of the token that is not whole ms; nothing was written
--- @uses safe_integer shown
--- @clock server
--- @complexity O(log N), N = the tokens (the trim drops one item at most)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local login = KEYS[1]
local recent = KEYS[2]
local viewed = KEYS[3]
local views = KEYS[4]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local user = ARGV[2]
if user == '' then
  return redis.error_reply('BAD_USER must not be empty')
end
local item = ARGV[3]
local keep = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not keep or keep > 1000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 1000, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(login, '^(.+):login$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:login, got ' .. shown(login))
end
if recent ~= tag_of_keys .. ':recent' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:recent with <namespace> as in login, got ' .. shown(recent))
end
if viewed ~= tag_of_keys .. ':viewed:' .. token then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<namespace>}:viewed:<token> with <namespace> as in login and <token> = ARGV[1], ' ..
      'got ' .. shown(viewed))
end
if views ~= tag_of_keys .. ':viewed' then
  return redis.error_reply(
      'BAD_KEYS KEYS[4] must be {<namespace>}:viewed with <namespace> as in login, got ' .. shown(views))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('HLEN', login)
redis.call('ZCARD', recent)
redis.call('ZCARD', viewed)
redis.call('ZCARD', views)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local seen = redis.call('ZSCORE', recent, token)
if seen and not safe_integer(seen, 0, 9007199254740990) then
  return redis.error_reply('BAD_RECENT the token was last seen at ' .. shown(seen) .. ', not a time in whole ms')
end
seen = tonumber(seen)
if seen and seen >= now then
  now = seen + 1
end
redis.call('HSET', login, token, user)
redis.call('ZADD', recent, now, token)
if item ~= '' then
  redis.call('ZADD', viewed, now, item)
  redis.call('ZREMRANGEBYRANK', viewed, 0, -keep - 1)
  redis.call('ZINCRBY', views, -1, item)
end
return now
