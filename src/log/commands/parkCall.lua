--[[
  Parks a running call (sleep or ask), fenced: a planned wait, not a crash (R14). The next attempt
  that begins sees 'parked' and resumes instead of classifying a cut. The session goes idle here,
  so a small log gives back its unused bytes (includes/compactLog.lua).

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] log: session log stream
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] record: harness.tool.suspended record JSON

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
local callsKey, logKey = KEYS[1], KEYS[2]
local toolCallId, epoch, record = ARGV[1], ARGV[2], ARGV[3]

--@include fence
--@include compactLog
local state, fenced, ownEpoch = loadFence(callsKey, toolCallId, epoch)
if ownEpoch and state.s == 'parked' then return {'ok'} end
if fenced then return fencedReply(state) end
state.s = 'parked'
redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
redis.call('XADD', logKey, '*', 'r', record)
compactLog(logKey)
return {'ok'}
