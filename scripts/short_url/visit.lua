--- Follows a short link: its URL, counting the visit; nil when there is none, or it has expired or is used up.
---
--- 《Redis 应用实例》 chapter 20's `restore`, plus what the book has not: the link's
--- expiry and visit limit are enforced here, on the server's clock, and each visit is
--- counted. The visit that uses up the last one allowed still gets the URL. A link found
--- expired is deleted (with its count); a used-up link is kept, so its count can still be
--- read, and answers nil.
--- @key links hash               short id -> URL (the book's `mapping_hash`)
--- @key expiries zset            short id -> when the link expires (ms, server clock)
--- @key limits hash              short id -> the most visits the link allows
--- @key visits hash              short id -> visits so far
--- @arg id string non-empty      the short id
--- @return string?                 the URL; nil when the link does not exist, has expired or is used up
--- @error BAD_ARGS                 not 4 keys and 1 argument
--- @error BAD_ID                   `id` is empty
--- @clock server
--- @complexity O(log N), N = the links with an expiry
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local links = KEYS[1]
local expiries = KEYS[2]
local limits = KEYS[3]
local visits = KEYS[4]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', expiries)
redis.call('HLEN', limits)
redis.call('HLEN', visits)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Whether `link` has expired, or was visited as often as it allows.
local function over(link)
  local deadline = redis.call('ZSCORE', expiries, link)
  if deadline and tonumber(deadline) <= now then
    return true
  end
  local most = redis.call('HGET', limits, link)
  return most ~= false and tonumber(redis.call('HGET', visits, link) or '0') >= tonumber(most)
end

-- Deletes `link` and everything kept about it.
local function forget(link)
  redis.call('HDEL', links, link)
  redis.call('ZREM', expiries, link)
  redis.call('HDEL', limits, link)
  redis.call('HDEL', visits, link)
end

local url = redis.call('HGET', links, id)
if not url then
  return false
end
if over(id) then
  local deadline = redis.call('ZSCORE', expiries, id)
  if deadline and tonumber(deadline) <= now then
    forget(id)
  end
  return false
end
redis.call('HINCRBY', visits, id, 1)
return url
