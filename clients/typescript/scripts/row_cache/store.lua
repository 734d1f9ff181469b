--- Stores a claimed row's fresh copy, unless the row was unscheduled meanwhile.
---
--- Redis in Action chapter 2 (`cache_rows`' `SET inv:<row>`). A worker renders the row
--- between its claim and this write; if the row was unscheduled in between, writing the
--- copy would leave a stale row cached for ever, so the copy is deleted instead.
--- @key delays zset {<namespace>}:delays     row id -> delay between two copies (ms)
--- @key copy string {<namespace>}:inv:<row>  the row's cached copy
--- @arg row string non-empty  the row id
--- @arg content bytes         the row's copy (the book stores its JSON)
--- @return bool               1 if stored; 0 if the row was unscheduled (its copy is gone)
--- @error BAD_ARGS            not 2 keys and 2 arguments
--- @error BAD_ROW             empty
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(1), plus the copy's size
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
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delays = KEYS[1]
local copy = KEYS[2]
local row = ARGV[1]
if row == '' then
  return redis.error_reply('BAD_ROW must not be empty')
end
local content = ARGV[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(delays, '^(.+):delays$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:delays, got ' .. shown(delays))
end
if copy ~= tag_of_keys .. ':inv:' .. row then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:inv:<row> with <namespace> as in delays and <row> = ARGV[1], got ' ..
      shown(copy))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('STRLEN', copy)
local every = tonumber(redis.call('ZSCORE', delays, row))
if every and every > 0 then
  redis.call('SET', copy, content)
  return 1
end
redis.call('DEL', copy)
return 0
