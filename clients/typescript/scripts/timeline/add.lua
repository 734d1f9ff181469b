--- Adds entries to a timeline, each at its own time, and trims it to its maximum length in the same step.
---
--- 《Redis 应用实例》 chapter 24 (`Timeline.add`) and the 2011 cookbook's `append`. The book
--- passes each {item: time} mapping as a separate argument of redis-py's `zadd`, which
--- reads the second one as a flag: every mapping after the first is silently dropped.
--- Here all entries are added, and then, with `max_length`, the oldest entries beyond it
--- are removed (at most 2000 per call, so a timeline whose maximum was just lowered
--- shrinks over a few adds). Each entry's time is the caller's (ms of any clock the app
--- picks; a backfill writes old times), and an item added again moves to its new time.
--- @key timeline zset <key>   item -> time (ms)
--- @arg max_length uint? 1..=10^15-1   the most entries to keep; empty for no maximum
--- @arg entries bytes... 2..=2000   time, item, time, item, …: from 1 to 1000 entries; times in ms, from 0 to 10^15 - 1
--- @return (int, int)         the length now, and the entries trimmed
--- @error BAD_ARGS            not 1 key and from 3 to 2001 arguments
--- @error BAD_MAX_LENGTH      not an integer within its range (or empty)
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_ENTRIES         a time without an item, or a time that is not whole ms from 0 to 10^15 - 1
--- @complexity O((M + T) log N), M = entries given, T = entries trimmed (at most 2000), N = the length
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
if #KEYS ~= 1 or #ARGV < 3 or #ARGV > 2001 then
  return redis.error_reply('BAD_ARGS expected 1 key and from 3 to 2001 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local timeline = KEYS[1]
local max_length = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if ARGV[1] ~= '' and (not max_length or max_length > 999999999999999) then
  return redis.error_reply(
      'BAD_MAX_LENGTH must be an integer from 1 to 999999999999999, or empty, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if timeline == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(timeline))
end
-- End of the generated input checks.
if #ARGV % 2 ~= 1 then
  return redis.error_reply('BAD_ENTRIES ' .. (#ARGV - 1) .. ' times and items: a time has no item')
end
local pairs_in_order = {}
for i = 2, #ARGV, 2 do
  local time = ARGV[i]
  if not (time == '0' or (string.match(time, '^[1-9]%d*$') and #time <= 15)) then
    return redis.error_reply('BAD_ENTRIES time ' .. (i / 2) .. ' must be whole ms from 0 to 10^15 - 1, got '
      .. string.format('%q', string.sub(time, 1, 32)))
  end
  pairs_in_order[#pairs_in_order + 1] = time
  pairs_in_order[#pairs_in_order + 1] = ARGV[i + 1]
end
for i = 1, #pairs_in_order, 1000 do
  redis.call('ZADD', timeline, unpack(pairs_in_order, i, math.min(i + 999, #pairs_in_order)))
end
local length = redis.call('ZCARD', timeline)
local trimmed = 0
if max_length and length > max_length then
  trimmed = math.min(length - max_length, 2000)
  redis.call('ZREMRANGEBYRANK', timeline, 0, trimmed - 1)
end
return { length - trimmed, trimmed }
