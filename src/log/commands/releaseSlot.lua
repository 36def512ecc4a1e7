--[[
  Gives back a call attempt's slot of one limit key and hands the room it leaves (with any a dead
  worker's expired lease left) to the oldest waiters, in FIFO order; the caller promotes them. Only
  the attempt's own slot goes: one its call's other attempt holds stays.

  Input:
    KEYS[1] slots: slots ZSET
    KEYS[2] waiting: waiting ZSET
    KEYS[3] starts: starts ZSET
    KEYS[4] keysIndex: keys index ZSET
    KEYS[5] handed: handed HASH (member -> ms it first became ready, for a waiter handed a slot: its wait time)
    ARGV[1] holder: the attempt's slot (<member>#<attempt token>)
    ARGV[2] leaseMs
    ARGV[3] concurrency: concurrency (0: none)
    ARGV[4] rateLimit: rate limit (0: none)
    ARGV[5] perMs: rate per ms
    ARGV[6] key: the key as the user gave it
    ARGV[7] idleMs: how long the key's state outlives its last use

  Output:
    {...promote}   members handed a slot
]]
local slotsKey, waitingKey, startsKey, keysKey, handedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local holder, leaseMs = ARGV[1], tonumber(ARGV[2])
local concurrency, rateLimit, per, rawKey = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local idleMs = tonumber(ARGV[7])

--@include limitSlots
local now = serverNow()
redis.call('ZREM', slotsKey, holder)
dropExpired(slotsKey, startsKey, now, rateLimit, per)
local free = freeRoom(slotsKey, startsKey, concurrency, rateLimit)
local promote = handOff(slotsKey, waitingKey, startsKey, handedKey, free, now, leaseMs, rateLimit, {})
touch({slotsKey, waitingKey, startsKey, handedKey}, keysKey, rawKey, now, idleMs)
return promote
