--[[
  Logs a step.ask question once, fenced: the step (its question id), harness.tool.ask, the open
  question for UIs and answerers, and the host-wide index of open questions.

  Input:
    KEYS[1] calls hash
    KEYS[2] steps hash
    KEYS[3] session log stream
    KEYS[4] questions hash (questionId -> question JSON)
    KEYS[5] open questions index (sorted set, member "<sid>|<questionId>")
    ARGV[1] toolCallId
    ARGV[2] caller's epoch
    ARGV[3] steps field
    ARGV[4] step value JSON ({"questionId": ...})
    ARGV[5] harness.tool.ask record JSON
    ARGV[6] questionId
    ARGV[7] question JSON
    ARGV[8] now ms
    ARGV[9] open questions member

  Output:
    {'ok'} | {'exists', storedValue} | {'fenced', currentEpoch}
]]
--@include fence
if fenced then return fencedReply() end
local stored = redis.call('HGET', KEYS[2], ARGV[3])
if stored then return {'exists', stored} end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('XADD', KEYS[3], '*', 'r', ARGV[5])
redis.call('HSETNX', KEYS[4], ARGV[6], ARGV[7])
redis.call('ZADD', KEYS[5], ARGV[8], ARGV[9])
return {'ok'}
