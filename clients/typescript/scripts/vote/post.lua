--- Sets when a subject was posted, which its "hot" rank depends on, and ranks it.
---
--- Beyond the book. A subject's posting time is otherwise the time of its first vote
--- (cast.lua); posting it first puts it in both rankings before any vote, at the time it
--- was really posted. Posting again moves the time.
--- @key up set {<namespace>}:up:<subject>      the users who voted the subject up (the book's `Vote:<subject>:up`)
--- @key down set {<namespace>}:down:<subject>  the users who voted it down
--- @key posted hash {<namespace>}:posted       subject -> when it was posted (ms)
--- @key hot_rank zset {<namespace>}:hot        subject -> its "hot" rank (reddit's: net votes and age)
--- @key best_rank zset {<namespace>}:best  subject -> its "best" rank (the Wilson lower bound of its share of up votes)
--- @arg subject string non-empty   the subject
--- @arg at uint? 0..=10^15-1  when it was posted (ms, Unix time); empty for now
--- @return nil                nothing
--- @error BAD_ARGS            not 5 keys and 2 arguments
--- @error BAD_SUBJECT         empty
--- @error BAD_AT              not an integer within its range (or empty)
--- @error BAD_KEYS            a key not named as its template says
--- @uses rank
--- @clock server
--- @complexity O(log S), S = the subjects ranked
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; vote/_shared.lua of the scripts folder).
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
-- The two rankings of subject `id`, from its votes now and its posting time (ms).
local function rank(up_set, down_set, hot_set, best_set, id, posted_ms)
  local ups, downs = redis.call('SCARD', up_set), redis.call('SCARD', down_set)
  -- reddit's "hot": the order of magnitude of the net score, plus 1 for every 12.5 hours
  -- since 2005-12-08 07:46:43 UTC, so newer subjects rise above older ones.
  local net = ups - downs
  local sign = net > 0 and 1 or (net < 0 and -1 or 0)
  local hot = sign * math.log10(math.max(math.abs(net), 1)) + (posted_ms / 1000 - 1134028003) / 45000
  -- The lower bound of the Wilson score interval (95%, z = 1.96) of the share of up votes.
  local n, z = ups + downs, 1.96
  local wilson = 0
  if n > 0 then
    local p = ups / n
    wilson = (p + z * z / (2 * n) - z * math.sqrt((p * (1 - p) + z * z / (4 * n)) / n)) / (1 + z * z / n)
  end
  redis.call('ZADD', hot_set, string.format('%.17g', hot), id)
  redis.call('ZADD', best_set, string.format('%.17g', wilson), id)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local up = KEYS[1]
local down = KEYS[2]
local posted = KEYS[3]
local hot_rank = KEYS[4]
local best_rank = KEYS[5]
local subject = ARGV[1]
if subject == '' then
  return redis.error_reply('BAD_SUBJECT must not be empty')
end
local at = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not at or at > 999999999999999) then
  return redis.error_reply('BAD_AT must be an integer from 0 to 999999999999999, or empty, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_cut(up, '', ':up:' .. subject)
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply(
      'BAD_KEYS KEYS[1] must be {<namespace>}:up:<subject> with <subject> = ARGV[1], got ' .. shown(up))
end
if down ~= tag_of_keys .. ':down:' .. subject then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:down:<subject> with <namespace> as in up and <subject> = ARGV[1], got ' ..
      shown(down))
end
if posted ~= tag_of_keys .. ':posted' or hot_rank ~= tag_of_keys .. ':hot' or best_rank ~= tag_of_keys .. ':best' then
  for i, each in ipairs({ ':posted', ':hot', ':best' }) do
    if KEYS[i + 2] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 2 .. '] must be {<namespace>}' .. each .. ' with <namespace> as in up, got ' ..
          shown(KEYS[i + 2]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('SCARD', up)
redis.call('SCARD', down)
redis.call('HLEN', posted)
redis.call('ZCARD', hot_rank)
redis.call('ZCARD', best_rank)
local posted_ms = at
if not posted_ms then
  local time = redis.call('TIME')
  posted_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
redis.call('HSET', posted, subject, posted_ms)
rank(up, down, hot_rank, best_rank, subject, posted_ms)
return nil
