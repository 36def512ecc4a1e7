--[[
  Gives back a call's slot of one limit key and hands the room it leaves (with any a dead worker's
  expired lease left) to the oldest waiters, in FIFO order; the caller promotes them.

  Input:
    KEYS[1] slots ZSET      KEYS[2] waiting ZSET      KEYS[3] starts ZSET
    KEYS[4] keys index ZSET
    KEYS[5] handed HASH (member -> ms it first became ready, for a waiter handed a slot: its wait time)
    ARGV[1] member   ARGV[2] lease ms   ARGV[3] concurrency (0: none)
    ARGV[4] rate limit (0: none)   ARGV[5] rate per ms   ARGV[6] the key as the user gave it

  Output:
    {...promote}   members handed a slot
]]
local slotsKey, waitingKey, startsKey, keysKey, handedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local member, leaseMs = ARGV[1], tonumber(ARGV[2])
local concurrency, rateLimit, per, rawKey = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]

--@include limitSlots
local now = serverNow()
redis.call('ZREM', slotsKey, member)
dropExpired(slotsKey, startsKey, now, rateLimit, per)
redis.call('ZADD', keysKey, now, rawKey)
local free = freeRoom(slotsKey, startsKey, concurrency, rateLimit)
return handOff(slotsKey, waitingKey, startsKey, handedKey, free, now, leaseMs, rateLimit, {})
