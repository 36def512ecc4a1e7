-- Landing a call's kept result (landResult, cancelCall): its staged `append` records, then the
-- harness.tool.result record, into the log; the call state 'done' with the result's entry id and the
-- result kept beside it; the call out of the open-calls index; a PUBLISH that wakes waiters.
-- (and its id into the conversation projection: include conversation first)
-- landCall(callsKey, logKey, convKey, stagedKey, openCallsKey, toolCallId, state, record, openMember, channel, messageKey)
-- returns the result's entry id.
local function landCall(callsKey, logKey, convKey, stagedKey, openCallsKey, toolCallId, state, record, openMember, channel, messageKey)
  local staged = redis.call('LRANGE', stagedKey, 0, -1)
  for i = 1, #staged do redis.call('XADD', logKey, '*', 'r', staged[i]) end
  local id = redis.call('XADD', logKey, '*', 'r', record)
  indexConversation(convKey, logKey, id)
  redis.call('DEL', stagedKey)
  state.s = 'done'
  state.id = id
  redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
  redis.call('HSET', callsKey, toolCallId .. '\0result', record)
  redis.call('ZREM', openCallsKey, openMember)
  redis.call('PUBLISH', channel, messageKey .. '\n' .. record)
  return id
end
