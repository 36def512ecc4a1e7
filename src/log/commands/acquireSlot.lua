--[[
  Takes a slot of one limit key for a call attempt (R17), or puts the call in the key's FIFO line.
  Granted when a slot was handed to the call (on a release), or when there is room (concurrency and
  rate) and no waiter is ahead of it. The slot is the attempt's own (`holder`): another attempt of
  the same call (a zombie whose code still runs) holds its own and counts apart. Otherwise the call
  waits without a worker slot; room that waiters ahead of it can use is handed to them (they are
  promoted by the caller), so a slot freed by a dead worker's lease expiry is passed on by the next
  acquire as well as by a waiter's own re-check.

  Input:
    KEYS[1] slots: slots ZSET
    KEYS[2] waiting: waiting ZSET
    KEYS[3] starts: starts ZSET
    KEYS[4] keysIndex: keys index ZSET (the limit's keys by when their state expires: stats read it)
    KEYS[5] handed: handed HASH (member -> ms it first became ready, for a waiter handed a slot: its wait time)
    ARGV[1] member: member (<sessionId>|<toolCallId>, or a turn's <sessionId>|<inputId>)
    ARGV[2] holder: the attempt's slot (<member>#<attempt token>)
    ARGV[3] leaseMs: lease ms (the job lock: a slot not renewed within it is free again)
    ARGV[4] concurrency: concurrency (0: none)
    ARGV[5] rateLimit: rate limit (0: none)
    ARGV[6] perMs: rate per ms
    ARGV[7] key: the key as the user's key function gave it
    ARGV[8] idleMs: how long the key's state outlives its last use (the longer of the lease and the rate window)
    ARGV[9] recheckMs: re-check ms of a concurrency waiter (its fallback when no release wakes it)

  Output:
    {'granted', waitedMs, startedAt (server ms: the start the rate counts), ...promote}
    {'wait', 'concurrency' | 'rate', untilMs, ...promote}   (promote: waiters handed a slot)
]]
local slotsKey, waitingKey, startsKey, keysKey, handedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local member, holder, leaseMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local concurrency, rateLimit, per = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local rawKey, idleMs, recheckMs = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])

--@include limitSlots
local now = serverNow()
local stateKeys = {slotsKey, waitingKey, startsKey, handedKey}
dropExpired(slotsKey, startsKey, now, rateLimit, per)

local waitingSince = redis.call('ZSCORE', waitingKey, member)
local readyAt = waitingSince or redis.call('HGET', handedKey, member)
local function grant(promote)
  -- a slot handed to the call becomes this attempt's own
  redis.call('ZREM', slotsKey, member)
  redis.call('ZADD', slotsKey, now + leaseMs, holder)
  if rateLimit > 0 then
    -- a start held for it by a hand-off becomes its real start, now
    redis.call('ZREM', startsKey, member .. '@h')
    redis.call('ZADD', startsKey, now, member .. '@' .. now)
  end
  redis.call('ZREM', waitingKey, member)
  redis.call('HDEL', handedKey, member)
  touch(stateKeys, keysKey, rawKey, now, idleMs)
  local reply = {'granted', readyAt and (now - tonumber(readyAt)) or 0, now}
  for i = 1, #promote do reply[#reply + 1] = promote[i] end
  return reply
end

if redis.call('ZSCORE', slotsKey, member) then
  -- a slot handed to it comes with its start (one written before holders existed is a new start, within the rate)
  local handedStart = rateLimit == 0 or redis.call('ZSCORE', startsKey, member .. '@h')
  if handedStart or rateLimit - redis.call('ZCARD', startsKey) > 0 then return grant({}) end
  redis.call('ZREM', slotsKey, member)
end

local free = freeRoom(slotsKey, startsKey, concurrency, rateLimit)
local ahead = redis.call('ZRANK', waitingKey, member) or redis.call('ZCARD', waitingKey)
-- room for every waiter ahead and this call: the ones ahead (asleep) are handed theirs
if free > ahead then return grant(handOff(slotsKey, waitingKey, startsKey, handedKey, ahead, now, leaseMs, rateLimit, {})) end

-- a waiter whose handed slot expired before it came back takes its old place in the line
if not waitingSince then
  redis.call('ZADD', waitingKey, readyAt or now, member)
  redis.call('HDEL', handedKey, member)
end
local promote = handOff(slotsKey, waitingKey, startsKey, handedKey, math.min(free, ahead), now, leaseMs, rateLimit, {})
local rank = redis.call('ZRANK', waitingKey, member)
local reply = {'wait'}
if concurrency > 0 and concurrency - redis.call('ZCARD', slotsKey) <= 0 then
  -- woken by a release's hand-off; the re-check only covers a releaser that died before it promoted
  reply[2] = 'concurrency'
  reply[3] = now + recheckMs * (1 + math.min(math.floor(rank / concurrency), 9))
else
  -- the rank-th start from now opens when the start that many places into the window leaves it
  local window = math.max(rateLimit, 1)
  local oldest = redis.call('ZRANGE', startsKey, rank % window, rank % window, 'WITHSCORES')
  local base = oldest[2] and tonumber(oldest[2]) or now
  reply[2] = 'rate'
  reply[3] = base + per * (1 + math.floor(rank / window))
end
-- the line outlives this waiter's re-check (it keeps its place when it comes back a little late)
touch(stateKeys, keysKey, rawKey, now, math.max(idleMs, reply[3] - now + idleMs))
for i = 1, #promote do reply[#reply + 1] = promote[i] end
return reply
