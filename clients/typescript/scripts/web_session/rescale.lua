--- Keeps the `keep` most viewed items and halves every view count, so that new items can climb.
---
--- Redis in Action chapter 2 (`rescale_viewed`): `ZREMRANGEBYRANK viewed: 20000 -1`, then
--- `ZINTERSTORE viewed: 1 viewed: WEIGHTS 0.5`, as two commands with views counted in
--- between. Here both happen in one step, and an empty set is left alone. Halving
--- rebuilds the set, at about 0.3 µs per item on a 2-core machine: the book's 20,000
--- items took 6 to 10 ms, too close to the 10 ms any call may take, so at most 10,000
--- are kept (3 to 4 ms). To stay bounded, one call drops at most 1000
--- of the least viewed items beyond `keep`; only a call that leaves no more than `keep`
--- halves, so a set that grew far beyond it is trimmed over a few calls, then halved once.
--- @key views zset {<namespace>}:viewed       every item -> minus its views
--- @key scratch zset {<namespace>}:rescaling  empty between calls: the halved copy is built here, then renamed
--- @arg keep uint 1..=10000   how many of the most viewed items to keep (the book keeps 20,000)
--- @return (int, bool)        the items dropped, and whether the counts were halved (0: call again)
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_KEEP            not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(N log N), N = `keep` (the halving rebuilds the set), plus O(log N) per item dropped (at most 1000)
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local views = KEYS[1]
local scratch = KEYS[2]
local keep = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 10000, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(views, '^(.+):viewed$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:viewed, got ' .. shown(views))
end
if scratch ~= tag_of_keys .. ':rescaling' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:rescaling with <namespace> as in views, got ' .. shown(scratch))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', scratch)
local size = redis.call('ZCARD', views)
local dropped = math.min(math.max(size - keep, 0), 1000)
if dropped > 0 then
  redis.call('ZREMRANGEBYRANK', views, -dropped, -1)
end
if size - dropped > keep then
  return { dropped, 0 }
end
if size > 0 then
  -- Halved into a fresh set that replaces the old one, which UNLINK frees in the
  -- background: a third cheaper than ZINTERSTORE into `views` itself.
  redis.call('ZINTERSTORE', scratch, 1, views, 'WEIGHTS', 0.5)
  redis.call('UNLINK', views)
  redis.call('RENAME', scratch, views)
end
return { dropped, 1 }
