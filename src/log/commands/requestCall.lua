--[[
  Logs a runTool request once per tool call id: the same id with the same tool and input is the same
  call (a caller's retry); with another tool or input it is refused, so an id never names two calls.
  Lists the session in the sessions index (retention starts from there) in the same write, so a
  runTool call pays no command of its own for it (issue 24).
  With ARGV[6] (a runTool call under a generated id, of a tool that may skip its begin: callMarks.ts),
  the call is begun here too, as beginCall begins a fresh one, and marked `q` (queued): its job's
  first delivery runs at epoch 1 without a begin of its own; any other begin of it counts as a cut.

  Input:
    KEYS[1] calls: calls hash ("<toolCallId>\0req" -> fingerprint of the call's tool and input; with ARGV[6]
            the call's state and "<toolCallId>\0names", as beginCall.lua writes them)
    KEYS[2] log: session log stream
    KEYS[3] sessions: sessions index (sorted set; NX: a listed session keeps its score, its last activity)
    KEYS[4] openCalls: open calls index (only with ARGV[6])
    ARGV[1] toolCallId
    ARGV[2] fingerprint
    ARGV[3] record: harness.tool.requested record JSON
    ARGV[4] now: now ms
    ARGV[5] sessionId: session id (member of the sessions index)
    ARGV[6] beginFor: '' or the harness name: begin the call (state, open calls index, harness.tool.started)
    ARGV[7] name: tool name (with ARGV[6])
    ARGV[8] openMember: open calls member (with ARGV[6])
    ARGV[9] version: '' or the harness version the call begins under (with ARGV[6]; docs/deploys.md)

  Output:
    {'added', entryId} | {'exists'} | {'conflict'}
]]
local callsKey, logKey, sessionsKey, openCallsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local toolCallId, fingerprint, record, now, sessionId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local beginFor, name, openMember, version = ARGV[6], ARGV[7], ARGV[8], ARGV[9]

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
  redis.call('XADD', logKey, '*', 'r', cjson.encode({
    type = 'harness.tool.started', toolCallId = toolCallId, name = name, attempt = 1, replay = 'safe', reason = 'fresh', version = began}))
end
return {'added', entryId}
