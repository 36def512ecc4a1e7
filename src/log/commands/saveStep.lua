--[[
  Stores a finished step, fenced: the step value plus its harness.tool.step record, in one write.
  The first stored value wins; a later save of the same step returns the stored one.

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] steps: steps hash ("<toolCallId>\0<step name>" -> value JSON, '' for no value)
    KEYS[3] log: session log stream
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] stepField: steps field
    ARGV[4] value: value JSON ('' for no value)
    ARGV[5] record: log record JSON ('' for none)

  Output:
    {'ok'} | {'exists', storedValue} | {'fenced', currentEpoch}
]]
local callsKey, stepsKey, logKey = KEYS[1], KEYS[2], KEYS[3]
local toolCallId, epoch, stepField, value, record = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

--@include fence
local state, fenced = loadFence(callsKey, toolCallId, epoch)
if fenced then return fencedReply(state) end
-- HSETNX stores it unless a value is there: one call for the common first save
if redis.call('HSETNX', stepsKey, stepField, value) == 0 then return {'exists', redis.call('HGET', stepsKey, stepField)} end
if record ~= '' then redis.call('XADD', logKey, '*', 'r', record) end
return {'ok'}
