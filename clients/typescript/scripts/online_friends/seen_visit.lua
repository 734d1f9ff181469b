--- Records that `user` was seen at `now` (design b), and forgets up to 100 users not seen for `keep`.
---
--- 《Redis入门指南》 §5.3.4, design b: `last.seen` maps each user to the time it was last
--- seen, on the caller's clock (as design a names minutes by it). The book never trims
--- it; here each visit deletes up to 100 users not seen for `keep`, so the set holds
--- about the users of the last `keep`.
--- @key seen zset {<ns>}:last.seen  user -> when it was last seen (ms): the book's `last.seen`
--- @arg user string non-empty    the user seen
--- @arg now uint 0..=10^15-1  the time, in milliseconds
--- @arg keep ms 1..=10^15-1   how long a user is remembered after it was last seen
--- @return nil                nothing
--- @error BAD_ARGS            not 1 key and 3 arguments
--- @error BAD_USER            empty
--- @error BAD_NOW             not an integer within its range
--- @error BAD_KEEP            not whole milliseconds within its range
--- @error BAD_KEYS            a key not named as its template says
--- @clock caller
--- @complexity O(log N), N = the users remembered
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local seen = KEYS[1]
local user = ARGV[1]
if user == '' then
  return redis.error_reply('BAD_USER must not be empty')
end
local now = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not now or now > 999999999999999 then
  return redis.error_reply('BAD_NOW must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[2]))
end
local keep = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not keep or keep > 999999999999999 then
  return redis.error_reply('BAD_KEEP must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(seen, '^(.+):last%.seen$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<ns>}:last.seen, got ' .. shown(seen))
end
-- End of the generated input checks.
redis.call('ZCARD', seen)
-- GT: a visit that arrives late (another app server's, a retry) never moves a user back.
redis.call('ZADD', seen, 'GT', now, user)
local stale = redis.call('ZRANGE', seen, '-inf', '(' .. string.format('%d', now - keep), 'BYSCORE', 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', seen, unpack(stale))
end
return nil
