--[[
  A woken call's wait that its code no longer registers (a deploy changed the wait's event, key or
  step name) leaves its old (event, key) hash (includes/eventHash.lua), atomically: the event
  delivered to it, if one was, is returned for the call's new wait to take (its fields stay until the
  payload is stored, so a crash between finds it again); else its waiter entry goes, so a later send
  to the old address is kept instead of answered 'delivered' to a call that no longer waits there.

  Input:
    KEYS[1] eventHash: the old (event, key) hash
    ARGV[1] member: waiter member 'c|<sid>|<toolCallId>|<old step>'
    ARGV[2] now: now ms
    ARGV[3] graceMs: grace ms: how long past its until a waiter's entries are kept

  Output:
    {'event', uid, payload} | {'left'}
]]
local key = KEYS[1]
local member, now, grace = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

--@include eventHash

local fields = loadEventHash(key, now, grace)
local delivered = deliveredTo(fields, member)
if delivered then return delivered end
if fields['w\0' .. member] then
  redis.call('HDEL', key, 'w\0' .. member)
  fields['w\0' .. member] = nil
  keepEventHash(key, fields, now, grace)
end
return {'left'}
