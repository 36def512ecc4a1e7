--[[
  Completes the session's conversation projection (includes/conversation.lua) from the log: the
  reader read the log's conversation records before the projection's first id (all of them when there
  was no projection) and hands their ids here. Entries written since all have their ids in the
  projection already (their writers created or extended it), so prepending the older ones makes it
  complete. Idempotent: a projection already complete is left as it is.

  Input:
    KEYS[1] conversation: the session's conversation projection
    ARGV[1..] entryIds: entry ids of the log's conversation records the reader found, in log order

  Output:
    {'filled'} | {'complete'}
]]
local convKey = KEYS[1]

-- stream ids compare by their ms part, then their sequence
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end

local head = redis.call('LINDEX', convKey, 0)
if head == '^' then return {'complete'} end
if not head then
  redis.call('RPUSH', convKey, '^')
  for i = 1, #ARGV do redis.call('RPUSH', convKey, ARGV[i]) end
  return {'filled'}
end
local first = string.sub(head, 2)
redis.call('LPOP', convKey)
for i = #ARGV, 1, -1 do
  if before(ARGV[i], first) then redis.call('LPUSH', convKey, ARGV[i]) end
end
redis.call('LPUSH', convKey, '^')
return {'filled'}
