--- Keeps a log line with a running job: `logs.lua` reads them, until the job ends.
---
--- Beyond the books (BullMQ's `job.log`). Only the holder of the job's current lease can
--- write (see `ack.lua`). The lines are kept with the job in `jobs` (l:<id>, a
--- MessagePack array of the lines, oldest first) and go with it when it ends or is
--- removed; a job keeps its newest `keep` lines and at most 64 KiB of them (older lines
--- are dropped, and a line is at most 4 KiB), whichever delivery wrote them.
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @arg token string non-empty   the lease token `take.lua` returned with the job
--- @arg line bytes len:1..=4096  the line
--- @arg keep uint 1..=1000       the most lines the job keeps (BullMQ's `keepLogs`); older ones are dropped
--- @return int                   how many lines the job keeps now
--- @error BAD_ARGS               not 1 key and 4 arguments
--- @error BAD_ID                 empty
--- @error BAD_TOKEN              empty
--- @error BAD_LINE               not from 1 to 4096 bytes long, or longer than 4096 bytes
--- @error BAD_KEEP               not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @error BAD_JOBS               `jobs` holds log lines for the job that these scripts did not write; nothing written
--- @uses held_group log_lines
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
-- The group of job `job_id` (false for none) when it is held under `job_token`, the
-- queue's stored settings (#settings, read in the same call: see settings_of), the job's
-- parent link (its P: field, false for none: see parent_of) and its own options (its o:
-- field, false for none: see retry_of); nil and a LEASE_LOST error reply when it is not
-- held so. Reads only.
local function held_group(jobs_hash, job_id, job_token)
  local state, held, group, stored, link, options = unpack(redis.call('HMGET', jobs_hash, 's:' .. job_id,
    't:' .. job_id, 'g:' .. job_id, '#settings', 'P:' .. job_id, 'o:' .. job_id))
  -- A token is text: the caller's random part and the delivery count (see take.lua).
  if held ~= job_token then
    return nil, redis.error_reply('LEASE_LOST job ' .. shown(job_id) .. ' is ' .. (state or 'gone')
      .. ', not held under this token')
  end
  return group, nil, stored, link, options
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
if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 1 key and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local jobs = KEYS[1]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local line = ARGV[3]
if #line < 1 or #line > 4096 then
  return redis.error_reply('BAD_LINE must be from 1 to 4096 bytes long, got ' .. #line .. ' bytes')
end
local keep = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not keep or keep > 1000 then
  return redis.error_reply('BAD_KEEP must be an integer from 1 to 1000, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(jobs, '^(.+):jobs$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:jobs, got ' .. shown(jobs))
end
-- End of the generated input checks.
local _, bad = held_group(jobs, id, token)
if bad then
  return bad
end
local lines
lines, bad = log_lines(id, redis.call('HGET', jobs, 'l:' .. id))
if bad then
  return bad
end
lines[#lines + 1] = line
-- The newest `keep` lines, and of those as many as fit in 64 KiB.
local first, size = #lines - keep + 1, 0
if first < 1 then
  first = 1
end
local kept = {}
for i = #lines, first, -1 do
  size = size + #lines[i]
  if size > 65536 then
    break
  end
  kept[#kept + 1] = lines[i]
end
local newest_first = #kept
for i = 1, math.floor(newest_first / 2) do
  kept[i], kept[newest_first + 1 - i] = kept[newest_first + 1 - i], kept[i]
end
redis.call('HSET', jobs, 'l:' .. id, cmsgpack.pack(kept))
return #kept
