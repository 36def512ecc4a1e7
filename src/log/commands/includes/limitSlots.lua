-- Shared by acquireSlot and releaseSlot (one limit key's state, all in the limit's own slot):
--   slots   ZSET holder -> lease expiry (ms). A holder is '<member>#<attempt token>' (an attempt's own
--           slot: a zombie attempt and its call's new attempt hold two) or '<member>' (a slot handed to
--           a waiter, not yet taken up); an expired one is a dead worker's slot, dropped here
--   waiting ZSET member -> ms it first became ready (FIFO; a re-check keeps its place)
--   handed  HASH member -> ms a waiter handed a slot first became ready (its wait, when it starts)
--   starts  ZSET '<member>@<ms>' (a start) or '<member>@h' (a hand-off not yet started) -> ms
--   keys index ZSET key -> ms its state expires (stats list the keys not yet expired)
-- Every set expires once idle (a lease or a rate window after its last use, or after its furthest
-- waiter's re-check): a key used once leaves nothing behind.
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

-- the keys live at least `ms` more (never shortened; a key without expiry, written before it had one, gets one)
local function keepFor(keys, ms)
  for i = 1, #keys do
    local left = redis.call('PTTL', keys[i])
    if left ~= -2 and left < ms then redis.call('PEXPIRE', keys[i], ms) end
  end
end

-- marks the key used: its state and the index live `ms` more, and the index forgets keys already expired
local function touch(stateKeys, keysKey, rawKey, now, ms)
  keepFor(stateKeys, ms)
  redis.call('ZREMRANGEBYSCORE', keysKey, '-inf', now)
  redis.call('ZADD', keysKey, 'GT', now + ms, rawKey)
  keepFor({keysKey}, ms)
end
