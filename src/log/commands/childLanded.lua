--[[
  A child call of a fan-out landed: it leaves the set of children its parked parent waits for. The
  parent is woken (reply 1) when none is left, or, in a 'cancel-siblings' wait (member '!'), when the
  child failed, or, in a wait for any (member '*': a group with maxConcurrent waits for a place), at once. Idempotent: a child landed twice (a retry) finds itself gone and wakes nothing again.

  Input:
    KEYS[1] waits: the parent's wait set (child ids; '!' marks a cancel-siblings wait, '*' a wait for any)
    ARGV[1] childId: the child's call id
    ARGV[2] failed: '1' when the child landed an error, else ''

  Output:
    1 wake the parent | 0 not yet
]]
local waitsKey = KEYS[1]
local childId, failed = ARGV[1], ARGV[2]
if redis.call('SREM', waitsKey, childId) == 0 then return 0 end
if redis.call('SISMEMBER', waitsKey, '*') == 1 then
  redis.call('DEL', waitsKey)
  return 1
end
local left = redis.call('SCARD', waitsKey)
local cancelSiblings = redis.call('SISMEMBER', waitsKey, '!') == 1
if cancelSiblings then left = left - 1 end
if left == 0 then
  redis.call('DEL', waitsKey)
  return 1
end
if cancelSiblings and failed == '1' then return 1 end
return 0
