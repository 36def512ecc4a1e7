--[[
  A worker process's look at one shard, once a second (src/harness/eventTimerLoop.ts): the event
  timers that are due, and, when the look claims the shard's liveness look for this moment, the jobs
  other worker processes hold in the shard's active lists, with their lock's token and expiry, for the
  check whether those processes are still connected (src/liveness/deadWorkers.ts). An idle shard (no
  timer, no active job) costs one EXISTS. The queue keys are BullMQ's, given by
  src/lane/bullmqInternals.ts; all keys share the shard's hash tag (one slot on a Cluster).

  Input:
    KEYS[1] eventTimers: the shard's event timers (sorted set, score: due time)
    KEYS[2] lookClaim: the shard's liveness look claim (string, PX)
    KEYS[3..] active: the active list of each queue looked at
    ARGV[1] now: now ms
    ARGV[2] limit: due timers listed at most
    ARGV[3] claimMs: how long this look claims the shard's liveness look; 0: no claim, always look (a recheck); -1: no liveness look
    ARGV[4] livePrefix: the token prefix of workers that can be checked for liveness
    ARGV[5] own: this process's token prefix (its own jobs are not listed)
    ARGV[6] maxJobs: active jobs looked at per queue
    ARGV[7..] queuePrefixes: each active list's queue key prefix (`<bull prefix>:<queue>:`), in KEYS' order

  Output:
    {due members, held: flat {queue index (1-based), jobId, token, lock expiry ms}..., 1 if the active lists were looked at else 0}
]]
local timersKey, claimKey = KEYS[1], KEYS[2]
local now, limit, claimMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local livePrefix, own, maxJobs = ARGV[4], ARGV[5], tonumber(ARGV[6])

local due, held = {}, {}
local queues = #KEYS - 2
local liveness = claimMs >= 0 and queues > 0
-- an empty sorted set or list does not exist: one EXISTS says whether there is anything to look at
if redis.call('EXISTS', timersKey, unpack(KEYS, 3)) == 0 then return {due, held, liveness and 1 or 0} end
if limit > 0 then due = redis.call('ZRANGEBYSCORE', timersKey, '-inf', now, 'LIMIT', 0, limit) end
if not liveness then return {due, held, 0} end
if claimMs > 0 and not redis.call('SET', claimKey, own, 'NX', 'PX', claimMs) then return {due, held, 0} end
for q = 1, queues do
  local prefix = ARGV[6 + q]
  for _, jobId in ipairs(redis.call('LRANGE', KEYS[2 + q], 0, maxJobs - 1)) do
    local lockKey = prefix .. jobId .. ':lock'
    local token = redis.call('GET', lockKey)
    if token and string.sub(token, 1, #livePrefix) == livePrefix and string.sub(token, 1, #own) ~= own then
      table.insert(held, q)
      table.insert(held, jobId)
      table.insert(held, token)
      table.insert(held, redis.call('PEXPIRETIME', lockKey))
    end
  end
end
return {due, held, 1}
