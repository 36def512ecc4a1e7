-- Fencing of a tool call attempt's writes.
-- loadFence(callsKey, toolCallId, epoch) loads the call's state from the calls hash and returns
--   state    the decoded state table, or nil when the call has none
--   fenced   true unless `epoch` is the current epoch of a running call: the write must be refused
--   ownEpoch `epoch` is the current epoch, whatever the status: a command re-sent after a reconnect
--            finds its own earlier write and answers as that write did
-- fencedReply(state) is the reply of a refused write: {'fenced', currentEpoch or -1}.
local function loadFence(callsKey, toolCallId, epoch)
  local stateJson = redis.call('HGET', callsKey, toolCallId)
  local state = nil
  if stateJson then state = cjson.decode(stateJson) end
  local ownEpoch = (state ~= nil) and (tostring(state.e) == epoch)
  local fenced = (not ownEpoch) or (state.s ~= 'running')
  return state, fenced, ownEpoch
end

local function fencedReply(state)
  if state == nil then return {'fenced', -1} end
  return {'fenced', state.e}
end
