--- Ends a batch of the least recently seen sessions while more than `limit` remain, none seen since it was read.
---
--- Redis in Action chapter 2 (`clean_sessions`, `clean_full_sessions`). The book reads the
--- oldest tokens, then deletes them in three more commands: a token refreshed in between
--- is deleted anyway, and its user is logged out in the middle of a visit. Here the caller
--- reads the oldest tokens with their last-seen times (`ZRANGE recent 0 n-1 WITHSCORES`)
--- and passes them back; a token is ended only if its last-seen time is still the one
--- read, so a token refreshed since (its time only grows) is kept. Ending a token deletes
--- its items viewed and, with `carts`, its cart, takes it out of both indexes, and stops
--- as soon as only `limit` sessions remain, so several cleaners never end too many. Each
--- token's two keys are passed, in the order of `entries`, with or without `carts`.
--- @key login hash {<namespace>}:login    token -> user
--- @key recent zset {<namespace>}:recent  token -> last-seen time (ms)
--- @key sessions... any 2..=200 {<namespace>}:viewed:<token>|{<namespace>}:cart:<token> each token's viewed, then cart
--- @arg limit uint 0..=10^15-1   how many sessions to keep
--- @arg carts bool            1: also delete each ended token's cart (`clean_full_sessions`)
--- @arg entries string... 2..=200   token, last-seen time read (ms), token, time, …: from 1 to 100 tokens
--- @return [string]           the tokens ended, in the order given
--- @error BAD_ARGS            not from 4 to 202 keys and from 4 to 202 arguments; or not 2 keys per token
--- @error BAD_LIMIT           not an integer within its range
--- @error BAD_CARTS           not 1 or 0
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_ENTRIES         a token without a time, empty, or not its keys' token; a time not whole ms below 10^15
--- @uses shown
--- @complexity O(M log N), M = tokens given (at most 100), N = the sessions (big carts are freed in the background)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- What key name `s` holds between `head` and `tail`, when it is `head`, at least one byte,
-- then `tail`; else nil.
local function key_cut(s, head, tail)
  local stop = #s - #tail
  if stop > #head and string.sub(s, 1, #head) == head and string.sub(s, stop + 1) == tail then
    return string.sub(s, #head + 1, stop)
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 4 or #KEYS > 202 or #ARGV < 4 or #ARGV > 202 then
  return redis.error_reply(
      'BAD_ARGS expected from 4 to 202 keys and from 4 to 202 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local login = KEYS[1]
local recent = KEYS[2]
local limit = ARGV[1] == '0' and 0 or tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not limit or limit > 999999999999999 then
  return redis.error_reply('BAD_LIMIT must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[1]))
end
local carts = ARGV[2] == '1'
if not carts and ARGV[2] ~= '0' then
  return redis.error_reply('BAD_CARTS must be 1 or 0, got ' .. shown(ARGV[2]))
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
local token_of_item
for i = 3, #KEYS do
  if (i - 3) % 2 == 0 then
    token_of_item = key_cut(KEYS[i], tag_of_keys .. ':viewed:', '')
    if not token_of_item then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i .. '] must be {<namespace>}:viewed:<token> with <namespace> as in login, got ' ..
          shown(KEYS[i]))
    end
  else
    if KEYS[i] ~= tag_of_keys .. ':cart:' .. token_of_item then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i ..
          '] must be {<namespace>}:cart:<token> with <namespace> as in login and <token> as in sessions, got ' ..
          shown(KEYS[i]))
    end
  end
end
-- End of the generated input checks.
if #ARGV % 2 ~= 0 then
  return redis.error_reply('BAD_ENTRIES ' .. (#ARGV - 2) .. ' tokens and times: a token has no time')
end
local tokens = (#ARGV - 2) / 2
if #KEYS - 2 ~= tokens * 2 then
  return redis.error_reply('BAD_ARGS ' .. tokens .. ' tokens need ' .. tokens * 2 .. ' session keys, got '
    .. (#KEYS - 2))
end
-- The namespace's hash tag group, as the key check read it from `login`.
local group = string.sub(login, 1, #login - #':login')
for i = 3, #ARGV, 2 do
  local token, read = ARGV[i], ARGV[i + 1]
  if token == '' or not (read == '0' or (string.match(read, '^[1-9]%d*$') and #read <= 15)) then
    return redis.error_reply('BAD_ENTRIES token ' .. ((i - 1) / 2)
      .. ' is empty, or its time is not whole ms from 0 to 10^15 - 1')
  end
  if KEYS[i] ~= group .. ':viewed:' .. token then
    return redis.error_reply('BAD_ENTRIES token ' .. ((i - 1) / 2) .. ' is ' .. shown(token) .. ', but its keys are '
      .. shown(KEYS[i]) .. ' and ' .. shown(KEYS[i + 1]))
  end
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('HLEN', login)
local remaining = redis.call('ZCARD', recent)
local ended = {}
for t = 1, tokens do
  if remaining <= limit then
    break
  end
  local token, read = ARGV[2 * t + 1], tonumber(ARGV[2 * t + 2])
  if tonumber(redis.call('ZSCORE', recent, token)) == read then
    -- UNLINK: a big cart is freed off the main thread, so a batch costs the same whatever carts hold.
    redis.call('UNLINK', unpack(KEYS, 2 * t + 1, carts and 2 * t + 2 or 2 * t + 1))
    redis.call('HDEL', login, token)
    redis.call('ZREM', recent, token)
    remaining = remaining - 1
    ended[#ended + 1] = token
  end
end
return ended
