#!lua flags=no-writes
--- Reads the log lines a job keeps (`log.lua`), oldest first.
---
--- Beyond the books (BullMQ's `getJobLogs`). A page of at most `count` lines from
--- `offset`, and how many the job keeps; no lines when there is no such job, or it kept
--- none.
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @arg offset uint 0..=999      the first line to read, 0 for the oldest
--- @arg count uint 1..=1000      the most lines to read
--- @return (int, [bytes])        how many lines the job keeps, and the page
--- @error BAD_ARGS               not 1 key and 3 arguments
--- @error BAD_ID                 empty
--- @error BAD_OFFSET             not an integer within its range
--- @error BAD_COUNT              not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds log lines for the job that these scripts did not write
--- @uses log_lines
--- @complexity O(L), L = the job's lines (at most 64 KiB of them)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; work_queue/_shared.lua of the scripts folder).
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
-- The log lines job `job_id` keeps, `stored` as log.lua writes them in its l: field: a
-- MessagePack array of strings, oldest first ({} for none); nil and a BAD_JOBS error reply
-- for a value log.lua does not write. Reads nothing.
local function log_lines(job_id, stored)
  if not stored then
    return {}
  end
  local ok, after, lines = pcall(cmsgpack.unpack_one, stored)
  local fine = ok and after == -1 and type(lines) == 'table' and #lines <= 1000
  if fine then
    -- An array of strings: as many entries as its length (no map, no holes).
    local entries = 0
    for _, each in pairs(lines) do
      entries = entries + 1
      fine = fine and type(each) == 'string'
    end
    fine = fine and entries == #lines
  end
  if not fine then
    return nil, redis.error_reply('BAD_JOBS job ' .. shown(job_id) .. ' has the log lines ' .. shown(stored)
      .. ', not what log.lua writes')
  end
  return lines
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local jobs = KEYS[1]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local offset = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not offset or offset > 999 then
  return redis.error_reply('BAD_OFFSET must be an integer from 0 to 999, got ' .. shown(ARGV[2]))
end
local count = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not count or count > 1000 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 1000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(jobs, '^(.+):jobs$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:jobs, got ' .. shown(jobs))
end
-- End of the generated input checks.
local lines, bad = log_lines(id, redis.call('HGET', jobs, 'l:' .. id))
if bad then
  return bad
end
local page = {}
for i = offset + 1, math.min(#lines, offset + count) do
  page[#page + 1] = lines[i]
end
return { #lines, page }
