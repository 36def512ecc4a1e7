-- Shared by acquireSlot and releaseSlot (one limit key's state, all in the limit's own slot):
--   slots   ZSET member -> lease expiry (ms); an expired member is a dead worker's slot, dropped here
--   waiting ZSET member -> ms it first became ready (FIFO; a re-check keeps its place)
--   handed  HASH member -> ms a waiter handed a slot first became ready (its wait, when it starts)
--   starts  ZSET '<member>@<ms>' (a start) or '<member>@h' (a hand-off not yet started) -> ms
-- `concurrency` / `rateLimit` 0 = no such bound. Time is the server's (TIME), one clock for every worker.
local function serverNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function dropExpired(slotsKey, startsKey, now, rateLimit, per)
  redis.call('ZREMRANGEBYSCORE', slotsKey, '-inf', now)
  if rateLimit > 0 then redis.call('ZREMRANGEBYSCORE', startsKey, '-inf', now - per) end
end

-- how many may start now: the smaller of free slots and free starts in the rate window
local function freeRoom(slotsKey, startsKey, concurrency, rateLimit)
  local room = 1e9
  if concurrency > 0 then room = concurrency - redis.call('ZCARD', slotsKey) end
  if rateLimit > 0 then room = math.min(room, rateLimit - redis.call('ZCARD', startsKey)) end
  return room
end

-- gives the n oldest waiters a slot (and a start, held for them) and returns them, to be promoted
local function handOff(slotsKey, waitingKey, startsKey, handedKey, n, now, leaseMs, rateLimit, out)
  if n <= 0 then return out end
  local heads = redis.call('ZPOPMIN', waitingKey, n)
  for i = 1, #heads, 2 do
    local waiter = heads[i]
    redis.call('HSET', handedKey, waiter, heads[i + 1])
    redis.call('ZADD', slotsKey, now + leaseMs, waiter)
    if rateLimit > 0 then redis.call('ZADD', startsKey, now, waiter .. '@h') end
    out[#out + 1] = waiter
  end
  return out
end
