--[[
  Logs a runTool request once per tool call id: the same id with the same tool and input is the same
  call (a caller's retry); with another tool or input it is refused, so an id never names two calls.

  Input:
    KEYS[1] calls hash ("<toolCallId>\0req" -> fingerprint of the call's tool and input)
    KEYS[2] session log stream
    ARGV[1] toolCallId
    ARGV[2] fingerprint
    ARGV[3] harness.tool.requested record JSON

  Output:
    {'added', entryId} | {'exists'} | {'conflict'}
]]
local callsKey, logKey = KEYS[1], KEYS[2]
local toolCallId, fingerprint, record = ARGV[1], ARGV[2], ARGV[3]

local used = redis.call('HGET', callsKey, toolCallId .. '\0req')
if used then
  if used == fingerprint then return {'exists'} end
  return {'conflict'}
end
redis.call('HSET', callsKey, toolCallId .. '\0req', fingerprint)
return {'added', redis.call('XADD', logKey, '*', 'r', record)}
