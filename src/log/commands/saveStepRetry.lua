--[[
  Stores a failed try of a step with a retry policy, fenced: the step's retry state (tries so far,
  next time) in the steps hash plus its harness.tool.step.retry record, in one write (R16). A
  state with as many tries or more is kept: a command re-sent after a reconnect writes nothing twice.

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] steps: steps hash ("\0retry\0<toolCallId>\0<step name>" -> retry state JSON)
    KEYS[3] log: session log stream
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] retryField
    ARGV[4] state: retry state JSON ({a: failed tries, n?: next time ms, x?: 'exhausted' | 'stopped', m: message, c?: name})
    ARGV[5] tries: failed tries (the state's a)
    ARGV[6] record: log record JSON

  Output:
    {'ok'} | {'exists', storedState} | {'fenced', currentEpoch}
]]
local callsKey, stepsKey, logKey = KEYS[1], KEYS[2], KEYS[3]
local toolCallId, epoch, field, retryState, tries, record = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

--@include fence
local state, fenced = loadFence(callsKey, toolCallId, epoch)
if fenced then return fencedReply(state) end
local stored = redis.call('HGET', stepsKey, field)
if stored and cjson.decode(stored).a >= tonumber(tries) then return {'exists', stored} end
redis.call('HSET', stepsKey, field, retryState)
redis.call('XADD', logKey, '*', 'r', record)
return {'ok'}
