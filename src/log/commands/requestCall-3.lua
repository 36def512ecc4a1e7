--[[
  Logs a runTool request once per tool call id: the same id with the same tool and input is the same
  call (a caller's retry); with another tool or input it is refused, so an id never names two calls.
  Lists the session in the sessions index (retention starts from there) in the same write, so a
  runTool call pays no command of its own for it (issue 24).

  Input:
    KEYS[1] calls hash ("<toolCallId>\0req" -> fingerprint of the call's tool and input)
    KEYS[2] session log stream
    KEYS[3] sessions index (sorted set; NX: a listed session keeps its score, its last activity)
    ARGV[1] toolCallId
    ARGV[2] fingerprint
    ARGV[3] harness.tool.requested record JSON
    ARGV[4] now ms
    ARGV[5] session id (member of the sessions index)

  Output:
    {'added', entryId} | {'exists'} | {'conflict'}
]]
local callsKey, logKey, sessionsKey = KEYS[1], KEYS[2], KEYS[3]
local toolCallId, fingerprint, record, now, sessionId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

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
return {'added', redis.call('XADD', logKey, '*', 'r', record)}
