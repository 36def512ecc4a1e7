--[[
  Lands a tool call's kept result, fenced: the staged `append` records, then harness.tool.result,
  then the call state 'done', all in one atomic write.

  Input:
    KEYS[1] calls hash
    KEYS[2] session log stream
    KEYS[3] staged records list of this call
    KEYS[4] open calls index
    ARGV[1] toolCallId
    ARGV[2] caller's epoch
    ARGV[3] harness.tool.result record JSON
    ARGV[4] open calls member "<sid>|<toolCallId>"
    ARGV[5] events channel: PUBLISH "call|<member>\n<result record>" wakes waiters such as runTool (a lost message only delays: they re-check)

  Output:
    {'ok', resultEntryId} | {'fenced', currentEpoch}
]]
--@include fence
if ownEpoch and state.s == 'done' then return {'ok', state.id} end
if fenced then return fencedReply() end
local staged = redis.call('LRANGE', KEYS[3], 0, -1)
for i = 1, #staged do redis.call('XADD', KEYS[2], '*', 'r', staged[i]) end
local id = redis.call('XADD', KEYS[2], '*', 'r', ARGV[3])
redis.call('DEL', KEYS[3])
state.s = 'done'
state.id = id
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(state))
redis.call('HSET', KEYS[1], ARGV[1] .. '\0result', ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[4])
redis.call('PUBLISH', ARGV[5], 'call|' .. ARGV[4] .. '\n' .. ARGV[3])
return {'ok', id}
