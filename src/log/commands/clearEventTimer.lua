--[[
  Takes a call's event timer away once its job was enqueued (by its timeout or by its event): the
  call has its job again. A timer a newer park wrote (the woken attempt parked again, at a later
  epoch) is kept: it is that park's wake-up.

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] eventTimers: the shard's event timers (sorted set)
    ARGV[1] toolCallId
    ARGV[2] timerMember: `<sid>|<toolCallId>`
    ARGV[3] epoch: the parked epoch the job was enqueued for

  Output:
    1 (taken away) | 0 (kept: a newer park's)
]]
local callsKey, timersKey = KEYS[1], KEYS[2]
local toolCallId, timerMember, epoch = ARGV[1], ARGV[2], ARGV[3]

local stateJson = redis.call('HGET', callsKey, toolCallId)
if stateJson then
  local state = cjson.decode(stateJson)
  if state.s == 'parked' and tostring(state.e) ~= epoch then return 0 end
end
redis.call('ZREM', timersKey, timerMember)
return 1
