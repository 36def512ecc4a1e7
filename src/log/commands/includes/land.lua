-- Landing a call's kept result (landResult, cancelCall): its staged `append` records, then the
-- harness.tool.result record, into the log; the call state 'done' with the result's entry id and the
-- result kept beside it; the call out of the open-calls index; a (S)PUBLISH that wakes waiters, unless
-- `publish` is '' (the only waiter is in the landing's process, which wakes it from the reply) (and,
-- for a call of a turn, its id into the conversation projection: include conversation first;
-- a runTool call's result is no part of any model's conversation; its session goes idle, so a small
-- log gives back its unused bytes: include compactLog first)
-- landCall(callsKey, logKey, convKey, stagedKey, openCallsKey, toolCallId, state, record, openMember, publish, channel, messageKey)
-- returns the result's entry id.
local function landCall(callsKey, logKey, convKey, stagedKey, openCallsKey, toolCallId, state, record, openMember, publish, channel, messageKey)
  local staged = redis.call('LRANGE', stagedKey, 0, -1)
  for i = 1, #staged do redis.call('XADD', logKey, '*', 'r', staged[i]) end
  local id = redis.call('XADD', logKey, '*', 'r', record)
  if state.i then indexConversation(convKey, logKey, id) end
  redis.call('DEL', stagedKey)
  state.s = 'done'
  state.id = id
  redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
  redis.call('HSET', callsKey, toolCallId .. '\0result', record)
  redis.call('ZREM', openCallsKey, openMember)
  if not state.i then compactLog(logKey) end
  if publish ~= '' then redis.call(publish, channel, messageKey .. '\n' .. record) end
  return id
end
