-- A runTool request, logged once per tool call id (requestCall, startCall): the same id with the same
-- tool and input is the same call (a caller's retry), with another tool or input a conflict. Lists
-- the session in the sessions index. With `beginFor` (a harness name) the call is begun too, as
-- beginCall begins a fresh one, and marked `q` (queued): its job's first delivery runs at epoch 1.
-- `compact` '1': the harness.tool.started record is stored as its array (src/log/storedRecords.ts).
-- requestOnce(callsKey, logKey, sessionsKey, openCallsKey, toolCallId, fingerprint, record, now, sessionId, beginFor, name, openMember, version, compact)
-- returns {'added', entryId} | {'exists'} | {'conflict'}.
local function requestOnce(callsKey, logKey, sessionsKey, openCallsKey, toolCallId, fingerprint, record, now, sessionId, beginFor, name, openMember, version, compact)
  local used = redis.call('HGET', callsKey, toolCallId .. '\0req')
  if used then
    if used == fingerprint then
      -- a caller's retry: the session may have been removed from the index meanwhile (a repair)
      redis.call('ZADD', sessionsKey, 'NX', now, sessionId)
      return {'exists'}
    end
    return {'conflict'}
  end
  redis.call('HSET', callsKey, toolCallId .. '\0req', fingerprint)
  redis.call('ZADD', sessionsKey, 'NX', now, sessionId)
  local entryId = redis.call('XADD', logKey, '*', 'r', record)
  if beginFor ~= '' then
    -- the state and the call's names apart, each under 64 B (a small calls hash stays a listpack: beginCall.lua)
    local state = {s = 'running', e = 1, a = 1, r = 'safe', q = 1}
    redis.call('HSET', callsKey, toolCallId, cjson.encode(state), toolCallId .. '\0names', cjson.encode({name, beginFor, version}))
    redis.call('ZADD', openCallsKey, now, openMember)
    local began = nil
    if version ~= '' then began = version end
    local started
    if compact == '1' then
      started = cjson.encode({'b', toolCallId, name, 1, 'safe', 'fresh', began})
    else
      started = cjson.encode({
        type = 'harness.tool.started', toolCallId = toolCallId, name = name, attempt = 1, replay = 'safe', reason = 'fresh', version = began})
    end
    redis.call('XADD', logKey, '*', 'r', started)
  end
  return {'added', entryId}
end
