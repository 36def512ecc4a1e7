--[[
  Parks a running call (sleep, ask, event, ...), fenced: a planned wait, not a crash (R14). The next
  attempt that begins sees 'parked' and resumes instead of classifying a cut. The session goes idle
  here, so a small log gives back its unused bytes (includes/compactLog.lua). A call that parks
  without its BullMQ job (a runTool call's event wait) lists its wake-up time in the shard's event
  timers in the same write, so no moment exists where it is parked with neither a job nor a timer.
  A `replay: 'never'` call that parks from inside its tool (not for its limit or its approval)
  keeps `t` in its state: its tool began, so a cancel while it waits is kept on a rerun (R19).
  A call whose BullMQ job waits delayed slims the job's hash in the same write
  (docs/decisions/parked-call-memory.md): its data keeps what the job's id does not name (the caller
  passes it) and its options lose the job id BullMQ copies there; a hash whose values then all fit in
  64 B is written anew, so Redis stores it as a listpack (a hash table never converts back).

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] log: session log stream
    KEYS[3] eventTimers: the shard's event timers (sorted set)
    KEYS[4] job: the call's BullMQ job hash (any key of the slot when jobId is '')
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] record: harness.tool.suspended record JSON
    ARGV[4] timerMember: `<sid>|<toolCallId>` of a call that parks without its job, '' for one whose job waits delayed
    ARGV[5] until: ms the call wakes up at (the timer's score)
    ARGV[6] inTool: '1' when the tool itself parks (sleep, ask, event, retry, agent), '' before it ran (limit, approval)
    ARGV[7] jobId: the id of the job that waits delayed, '' to leave the job as it is
    ARGV[8] jobData: the data that job keeps while parked (JSON)

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
local callsKey, logKey, timersKey, jobKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local toolCallId, epoch, record, timerMember, untilMs, inTool = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local jobId, jobData = ARGV[7], ARGV[8]

--@include fence
--@include compactLog
--@include slimJob
local state, fenced, ownEpoch = loadFence(callsKey, toolCallId, epoch)
if ownEpoch and state.s == 'parked' then return {'ok'} end
if fenced then return fencedReply(state) end
state.s = 'parked'
if inTool == '1' and state.r == 'never' then state.t = 1 end
redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
if timerMember ~= '' then redis.call('ZADD', timersKey, untilMs, timerMember) end
redis.call('XADD', logKey, '*', 'r', record)
compactLog(logKey)
if jobId ~= '' then slimJob(jobKey, jobId, jobData) end
return {'ok'}
