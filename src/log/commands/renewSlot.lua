--[[
  Renews a running call's slot lease (every half lease, like BullMQ's lock renewal), only while the
  call holds it: a slot that expired (its holder was presumed dead) is not taken back.

  Input:
    KEYS[1] slots: slots ZSET
    ARGV[1] member
    ARGV[2] leaseMs

  Output:
    1 renewed | 0 not held
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
return 1
