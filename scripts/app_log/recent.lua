--- Logs a message to a recent log: pushes it with the server's time and keeps the last `keep`, in one step.
---
--- Redis in Action chapter 5 (`log_recent`): `LPUSH recent:<name>:<severity>` then
--- `LTRIM … 0 99`, in a MULTI of their own. The book prefixes the message with the web
--- server's `time.asctime()`; here the entry is `<ms> <message>`, the server's clock in
--- Unix ms (Lua in Redis has no date formatting, and one clock orders every server's
--- entries).
--- @key recent list recent:{<name>:<severity>}  the newest entries first, each `<ms> <message>`
--- @arg message string        the message
--- @arg keep uint 1..=10000   how many entries to keep (the book's 100)
--- @return int                when it was logged (ms, server clock)
--- @error BAD_ARGS            not 1 key and 2 arguments
--- @error BAD_KEEP            not an integer within its range
--- @clock server
--- @complexity O(1): the trim drops one entry at most
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local recent = KEYS[1]
local message = ARGV[1]
local keep = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not keep or keep > 10000 then
  return redis.error_reply('BAD_KEEP keep must be an integer from 1 to 10000, got ' .. shown(ARGV[2]))
end
-- End of the generated input checks.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('LPUSH', recent, string.format('%d', now) .. ' ' .. message)
redis.call('LTRIM', recent, 0, keep - 1)
return now
