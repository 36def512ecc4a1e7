--[[
  Cancels a parked call of an aborted turn, fenced on the parked state the caller saw: the staged
  `append` records, then harness.tool.result with the cancelled tool error, then the call state
  'done', and the call's open questions closed, all in one atomic write. A call that woke meanwhile
  (running) or landed (done) is left alone: it ends on its own, so a call never gets two results.
  The state's `t` stays: a `replay: 'never'` call that parked from inside its tool keeps its
  cancelled result on a rerun (R19); one that parked before its tool ran (limit, approval) runs again.

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] log: session log stream
    KEYS[3] staged: staged records list of this call
    KEYS[4] openCalls: open calls index
    KEYS[5] questions: questions hash
    KEYS[6] openQuestions: open questions index
    KEYS[7] conversation: the session's conversation projection (includes/conversation.lua)
    ARGV[1] toolCallId
    ARGV[2] epoch: the parked epoch the caller saw
    ARGV[3] record: harness.tool.result record JSON (error code 'cancelled')
    ARGV[4] openMember: open calls member
    ARGV[5] publish: 'PUBLISH', or 'SPUBLISH' on a Cluster
    ARGV[6] channel: events channel of the session's shard
    ARGV[7] messageKey: message key (formats.ts) of the landed result
    ARGV[8..] questions: pairs: questionId of the call, its open questions member

  Output:
    {'ok', resultEntryId} | {'done'} | {'running'} | {'moved'} | {'unknown'}
    'moved': parked under another epoch (it woke, asked again and parked): read its questions again
]]
local callsKey, logKey, stagedKey, openCallsKey, questionsKey, openQuestionsKey, convKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local toolCallId, epoch, record, openMember = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local publish, channel, messageKey = ARGV[5], ARGV[6], ARGV[7]

--@include conversation
--@include compactLog
--@include land
local stateJson = redis.call('HGET', callsKey, toolCallId)
if not stateJson then return {'unknown'} end
local state = cjson.decode(stateJson)
if state.s == 'done' then return {'done'} end
if state.s ~= 'parked' then return {'running'} end
if tostring(state.e) ~= epoch then return {'moved'} end
-- the waiters hear of the landing when the script ends, with its questions closed below
local id = landCall(callsKey, logKey, convKey, stagedKey, openCallsKey, toolCallId, state, record, openMember, publish, channel, messageKey)
for i = 8, #ARGV, 2 do
  local questionId = ARGV[i]
  -- an answer that came first stays; the question is closed either way
  if redis.call('HEXISTS', questionsKey, questionId .. '\0answer') == 0 then
    redis.call('HSET', questionsKey, questionId .. '\0closed', '1')
  end
  redis.call('ZREM', openQuestionsKey, ARGV[i + 1])
end
return {'ok', id}
