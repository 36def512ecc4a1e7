--[[
  Drops a BullMQ queue's base marker (member '0') while no job waits in it. BullMQ's fetch of a job
  sets the marker again for the next fetch; after a fetch that found the queue empty, a marker still
  set is stale, and the next blocking wait would return at once to fetch nothing (src/lane/bullmqInternals.ts).
  Atomic: a job added before this keeps its marker, one added after sets it again. A delayed job's
  marker (member '1') is left alone.

  Input:
    KEYS[1] marker: the queue's marker (sorted set)
    KEYS[2] wait: the queue's wait list
    KEYS[3] prioritized: the queue's prioritized set

  Output:
    1 dropped (or none was set) | 0 a job waits: left as it is
]]
if redis.call('LLEN', KEYS[2]) > 0 or redis.call('ZCARD', KEYS[3]) > 0 then return 0 end
redis.call('ZREM', KEYS[1], '0')
return 1
