#!lua flags=no-writes
--- Reads the queue's events after `after`: what happened to each job, oldest first.
---
--- Beyond the books (BullMQ's `QueueEvents`). The scripts that add, take, end, fail,
--- retry or report on a job append to `events` in the same call, once `configure.lua`
--- turned events on: `added` with its `state`, `waiting` (a delayed job come due, or a
--- flow's parent whose children ended), `active` with its `delivery`, `completed`,
--- `failed` (a delivery failed; the job is retried), `stalled` (its lease ran out; it is
--- retried) and `dead` with its `error`, `retried` (a dead job back to waiting), and
--- `progress` with the report. The
--- stream keeps at most the queue's `events_max` entries: `lost` says that entries after
--- `after` may have gone before they were read (the cap trimmed entries, and the oldest
--- kept comes after `after`: the reader fell a whole cap behind). A
--- reader keeps the id of the last entry it handled and reads on from there, also after a
--- reconnect; with nothing new it waits on `events` itself (`XREAD BLOCK … STREAMS
--- events <newest>`), then reads again. `count` 0 reads only the newest id, to follow
--- from now.
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @arg after string len:3..=33  a stream id, `<ms>-<seq>` (`0-0` for the oldest kept): the entries after it
--- @arg count uint 0..=1000      the most entries answered
--- @return (bool, string, [(string, string, string, bytes)])  whether entries after `after` may have
---                               been trimmed unread; the newest id (`0-0` for none), to wait from;
---                               and the entries: id, event, job, and its error or progress ('' for none)
--- @error BAD_ARGS               not 1 key and 2 arguments
--- @error BAD_AFTER              not from 3 to 33 bytes long, or not `<ms>-<seq>` with each part from 0 to 10^15
--- @error BAD_COUNT              not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_EVENTS             `events` holds an entry these scripts did not write
--- @uses safe_integer shown
--- @complexity O(log N + C), N = the entries, C = `count`
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local events = KEYS[1]
local after = ARGV[1]
if #after < 3 or #after > 33 then
  return redis.error_reply('BAD_AFTER must be from 3 to 33 bytes long, got ' .. #after .. ' bytes')
end
local count = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not count or count > 1000 then
  return redis.error_reply('BAD_COUNT must be an integer from 0 to 1000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(events, '^(.+):events$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:events, got ' .. shown(events))
end
-- End of the generated input checks.
local after_ms, after_seq = string.match(after, '^(%d+)%-(%d+)$')
after_ms = after_ms and safe_integer(after_ms, 0, 1000000000000000)
after_seq = after_seq and safe_integer(after_seq, 0, 1000000000000000)
if not (after_ms and after_seq) then
  return redis.error_reply('BAD_AFTER after must be <ms>-<seq>, each whole from 0 to 10^15, got ' .. shown(after))
end
-- Whether stream id `a` (text) comes after `ms`-`seq`.
local function later(a, ms, seq)
  local a_ms, a_seq = string.match(a, '^(%d+)%-(%d+)$')
  a_ms, a_seq = tonumber(a_ms), tonumber(a_seq)
  return a_ms > ms or (a_ms == ms and a_seq > seq)
end
if redis.call('EXISTS', events) == 0 then
  return { 0, '0-0', {} }
end
-- Entries only ever go by trimming, oldest first: some after `after` may have gone
-- unread when any went and the oldest kept comes after the one following `after`, which
-- this cannot tell from `after` itself (so a reader a whole cap behind hears it).
local info = redis.call('XINFO', 'STREAM', events)
local newest, added, length, first = '0-0', 0, 0, nil
for i = 1, #info, 2 do
  local name, value = info[i], info[i + 1]
  if name == 'last-generated-id' then
    newest = value
  elseif name == 'entries-added' then
    added = value
  elseif name == 'length' then
    length = value
  elseif name == 'first-entry' and value then
    first = value[1]
  end
end
local lost = added > length and first ~= nil and later(first, after_ms, after_seq)
local entries = {}
if count > 0 then
  for i, entry in ipairs(redis.call('XRANGE', events, '(' .. after, '+', 'COUNT', count)) do
    local fields = entry[2]
    local event, job = fields[2], fields[4]
    if not (fields[1] == 'event' and fields[3] == 'job' and event and job and #fields <= 6) then
      return redis.error_reply('BAD_EVENTS events holds the entry ' .. entry[1] .. ', not one these scripts write')
    end
    entries[i] = { entry[1], event, job, fields[6] or '' }
  end
end
return { lost and 1 or 0, newest, entries }
