--[[
  Moves the active job of a worker process that is gone (its connections closed: src/liveness/deadWorkers.ts)
  back to wait, with the writes BullMQ 6.7's stalled check (moveStalledJobsToWait) makes for a job whose
  lock expired: the lock removed, the job out of the active list, its stalled counter (`stc`) counted,
  the job failed past maxStalledCount (`defa`), pushed to wait with the queue's marker, the `waiting`
  and `stalled` events. Only while the lock is the same one the check saw: the same token and the same
  expiry (a renewal since, by a worker that was only slow, moves its expiry: nothing is moved). The
  queue keys are BullMQ's, given by src/lane/bullmqInternals.ts.

  Input:
    KEYS[1] job: the job's hash
    KEYS[2] lock: the job's lock
    KEYS[3] active: the queue's active list
    KEYS[4] wait: the queue's wait list
    KEYS[5] stalled: the queue's stalled set
    KEYS[6] meta: the queue's meta hash (paused, concurrency)
    KEYS[7] marker: the queue's marker
    KEYS[8] events: the queue's events stream
    ARGV[1] jobId
    ARGV[2] token: the lock's token the check saw
    ARGV[3] expiresAt: the lock's expiry (PEXPIRETIME) the check saw
    ARGV[4] maxStalledCount: the queue's workers' maxStalledCount

  Output:
    1 moved | 0 the lock changed (renewed, taken, expired) or the job is no longer active: nothing done
]]
local jobKey, lockKey, activeKey, waitKey, stalledKey, metaKey, markerKey, eventsKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local jobId, token, expiresAt, maxStalledCount = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

if redis.call('GET', lockKey) ~= token or redis.call('PEXPIRETIME', lockKey) ~= expiresAt then return 0 end
if redis.call('LREM', activeKey, 1, jobId) == 0 then return 0 end
redis.call('DEL', lockKey)
redis.call('SREM', stalledKey, jobId)
local stalledCount = redis.call('HINCRBY', jobKey, 'stc', 1)
if stalledCount > maxStalledCount then redis.call('HSET', jobKey, 'defa', 'job stalled more than allowable limit') end
-- moveJobToWait: the marker unless the queue is paused or at its global concurrency
local queue = redis.call('HMGET', metaKey, 'paused', 'concurrency')
local maxed = queue[1] or (queue[2] and redis.call('LLEN', activeKey) >= tonumber(queue[2]))
redis.call('RPUSH', waitKey, jobId)
if not maxed then redis.call('ZADD', markerKey, 0, '0') end
redis.call('XADD', eventsKey, '*', 'event', 'waiting', 'jobId', jobId, 'prev', 'active')
redis.call('XADD', eventsKey, '*', 'event', 'stalled', 'jobId', jobId)
return 1
