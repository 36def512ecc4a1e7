--[[
  Renews a running attempt's slot lease (every half lease, like BullMQ's lock renewal), only while the
  lease holds: a slot whose lease ran out (its holder was presumed dead, and its room may be another
  call's now) is not taken back. The key's state and its place in the keys index live on with it.

  Input:
    KEYS[1] slots: slots ZSET
    KEYS[2] keysIndex: keys index ZSET
    ARGV[1] holder: the attempt's slot (<member>#<attempt token>)
    ARGV[2] leaseMs
    ARGV[3] key: the key as the user gave it
    ARGV[4] idleMs: how long the key's state outlives its last use

  Output:
    1 renewed | 0 not held
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not lease or tonumber(lease) <= now then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
local idleMs = tonumber(ARGV[4])
for _, key in ipairs({KEYS[1], KEYS[2]}) do
  local left = redis.call('PTTL', key)
  if left ~= -2 and left < idleMs then redis.call('PEXPIRE', key, idleMs) end
end
redis.call('ZADD', KEYS[2], 'GT', now + idleMs, ARGV[3])
return 1
