--[[
  Stores a finished step, fenced: the step value plus its harness.tool.step record, in one write.
  The first stored value wins; a later save of the same step returns the stored one.

  Input:
    KEYS[1] calls hash
    KEYS[2] steps hash ("<toolCallId>\0<step name>" -> value JSON, '' for no value)
    KEYS[3] session log stream
    ARGV[1] toolCallId
    ARGV[2] caller's epoch
    ARGV[3] steps field
    ARGV[4] value JSON ('' for no value)
    ARGV[5] log record JSON

  Output:
    {'ok'} | {'exists', storedValue} | {'fenced', currentEpoch}
]]
--@include fence
if fenced then return fencedReply() end
local stored = redis.call('HGET', KEYS[2], ARGV[3])
if stored then return {'exists', stored} end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('XADD', KEYS[3], '*', 'r', ARGV[5]) end
return {'ok'}
