--[[
  Fences the running attempt of a tool call whose worker set was crashed on purpose (a test's
  SIGKILL-equivalent: src/harness/crashWorkers.ts): the call's epoch moves on, so every later write of
  that attempt (a step whose fn was in flight, a landing past its last lock check) is refused, as a
  killed process writes nothing. The call stays 'running': the next attempt's begin finds it cut, as
  after any crash. Sent while the crashed set still holds the call's job, before the job moves back to
  wait, so no newer attempt can have begun.

  Input:
    KEYS[1] calls: calls hash (toolCallId -> state JSON, beginCall.lua)
    ARGV[1] toolCallId

  Output:
    1 fenced | 0 the call is not running (no state, parked, done): nothing done
]]
local callsKey, toolCallId = KEYS[1], ARGV[1]

local stateJson = redis.call('HGET', callsKey, toolCallId)
if not stateJson then return 0 end
local state = cjson.decode(stateJson)
if state.s ~= 'running' then return 0 end
state.e = state.e + 1
redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
return 1
