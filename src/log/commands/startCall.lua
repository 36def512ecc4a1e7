--[[
  A runTool call of this process started in its request's own write
  (docs/decisions/local-runtool-start.md): the request, begun as requestCall begins it, then
  its BullMQ job made active at once under the lock of a slot a local fetch lane holds for it, as
  BullMQ's add and its moveToActive would leave it (the job hash, the id counter, the active list, the
  lock, the events stream's added/waiting/active entries: test/integration/laneContract.test.ts diffs
  them against BullMQ 6.7's own). One script where the add, the lane's fetch and its marker drop were
  three. A paused queue, or one with BullMQ's global concurrency or global rate limit, gets the job in
  its wait list as BullMQ's add puts it there, for BullMQ's own fetch (which counts the rate limit).
  Session and queue keys share the shard's hash tag: one slot on a Cluster.

  Input:
    KEYS[1] calls: calls hash (requestCall.lua)
    KEYS[2] log: session log stream
    KEYS[3] sessions: sessions index
    KEYS[4] openCalls: open calls index
    KEYS[5] job: the job's hash
    KEYS[6] active: the tool queue's active list
    KEYS[7] wait: the tool queue's wait list
    KEYS[8] prioritized: the tool queue's prioritized set
    KEYS[9] marker: the tool queue's marker
    KEYS[10] meta: the tool queue's meta hash (paused, concurrency, rate limit, events' length)
    KEYS[11] events: the tool queue's events stream
    KEYS[12] id: the tool queue's job counter
    ARGV[1] toolCallId
    ARGV[2] fingerprint
    ARGV[3] record: harness.tool.requested record JSON
    ARGV[4] now: now ms (the job's timestamp and processedOn)
    ARGV[5] sessionId: session id (member of the sessions index)
    ARGV[6] beginFor: the harness name (the call is begun with its request)
    ARGV[7] name: tool name (the job's name)
    ARGV[8] openMember: open calls member
    ARGV[9] version: '' or the harness version the call begins under
    ARGV[10] compact: '1' to store harness.tool.started as its array (src/log/storedRecords.ts)
    ARGV[11] jobId: the job's id
    ARGV[12] data: the job's data JSON
    ARGV[13] opts: the job's options JSON, as BullMQ stores them
    ARGV[14] token: the lock token of the lane's slot
    ARGV[15] lockMs: the lock's duration
    ARGV[16] worker: the lane's worker name ('' for none)
    ARGV[17] wake: '1' when the lane waits on the marker: set it, so its loop takes the job

  Output:
    {'started', entryId, 1 when no other job waits (the lane's fetch after its wake-up would find none) else 0}
    | {'queued', entryId} (the job waits in the queue; the lane's slot is not used) | {'exists'} | {'conflict'}
]]
local callsKey, logKey, sessionsKey, openCallsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobKey, activeKey, waitKey, prioritizedKey, markerKey, metaKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local eventsKey, idKey = KEYS[11], KEYS[12]
local toolCallId, fingerprint, record, now, sessionId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local beginFor, name, openMember, version, compact = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local jobId, data, opts, token, lockMs, worker, wake = ARGV[11], ARGV[12], ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17]

--@include request
local requested = requestOnce(callsKey, logKey, sessionsKey, openCallsKey, toolCallId, fingerprint, record, now, sessionId, beginFor, name, openMember, version, compact)
if requested[1] ~= 'added' then return requested end
local entryId = requested[2]
-- a job of this id exists (a fresh id never has one): BullMQ's add would leave it as it is
if redis.call('EXISTS', jobKey) == 1 then return {'queued', entryId} end

-- the job's hash as BullMQ's add writes it (storeJob), and as its moveToActive adds to it when the job
-- starts here (prepareJobForProcessing); the events stream's entries as each writes them
redis.call('INCR', idKey)
local queue = redis.call('HMGET', metaKey, 'paused', 'concurrency', 'max', 'opts.maxLenEvents')
local maxEvents = queue[4]
if not maxEvents then
  maxEvents = 10000
  redis.call('HSET', metaKey, 'opts.maxLenEvents', maxEvents)
end
local fields = {'name', name, 'data', data, 'opts', opts, 'timestamp', now, 'delay', 0, 'priority', 0}
if queue[1] or queue[2] or queue[3] then
  redis.call('HSET', jobKey, unpack(fields))
  redis.call('XADD', eventsKey, '*', 'event', 'added', 'jobId', jobId, 'name', name)
  redis.call('LPUSH', waitKey, jobId)
  local maxed = queue[2] and redis.call('LLEN', activeKey) >= tonumber(queue[2])
  if not queue[1] and not maxed then redis.call('ZADD', markerKey, 0, '0') end
  redis.call('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
  return {'queued', entryId}
end
for _, field in ipairs({'processedOn', now, 'ats', 1}) do table.insert(fields, field) end
if worker ~= '' then
  table.insert(fields, 'pb')
  table.insert(fields, worker)
end
redis.call('HSET', jobKey, unpack(fields))
redis.call('XADD', eventsKey, '*', 'event', 'added', 'jobId', jobId, 'name', name)
redis.call('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
redis.call('LPUSH', activeKey, jobId)
redis.call('SET', jobKey .. ':lock', token, 'PX', lockMs)
redis.call('XADD', eventsKey, '*', 'event', 'active', 'jobId', jobId, 'prev', 'waiting')
if wake == '1' then redis.call('ZADD', markerKey, 0, '0') end
local none = redis.call('LLEN', waitKey) == 0 and redis.call('ZCARD', prioritizedKey) == 0
return {'started', entryId, none and 1 or 0}
