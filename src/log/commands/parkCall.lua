--[[
  Parks a running call (sleep, ask, event, ...), fenced: a planned wait, not a crash (R14). The next
  attempt that begins sees 'parked' and resumes instead of classifying a cut. The session goes idle
  here, so a small log gives back its unused bytes (includes/compactLog.lua). A call that parks
  without its BullMQ job (a runTool call's event wait) lists its wake-up time in the shard's event
  timers in the same write, so no moment exists where it is parked with neither a job nor a timer.
  A `replay: 'never'` call that parks from inside its tool (not for its limit or its approval)
  keeps `t` in its state: its tool began, so a cancel while it waits is kept on a rerun (R19).

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] log: session log stream
    KEYS[3] eventTimers: the shard's event timers (sorted set)
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] record: harness.tool.suspended record JSON
    ARGV[4] timerMember: `<sid>|<toolCallId>` of a call that parks without its job, '' for one whose job waits delayed
    ARGV[5] until: ms the call wakes up at (the timer's score)
    ARGV[6] inTool: '1' when the tool itself parks (sleep, ask, event, retry, agent), '' before it ran (limit, approval)

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
local callsKey, logKey, timersKey = KEYS[1], KEYS[2], KEYS[3]
local toolCallId, epoch, record, timerMember, untilMs, inTool = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

--@include fence
--@include compactLog
local state, fenced, ownEpoch = loadFence(callsKey, toolCallId, epoch)
if ownEpoch and state.s == 'parked' then return {'ok'} end
if fenced then return fencedReply(state) end
state.s = 'parked'
if inTool == '1' and state.r == 'never' then state.t = 1 end
redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
if timerMember ~= '' then redis.call('ZADD', timersKey, untilMs, timerMember) end
redis.call('XADD', logKey, '*', 'r', record)
compactLog(logKey)
return {'ok'}
