--[[
  Logs a step.ask question once, fenced: the step (its question id), harness.tool.ask, the open
  question for UIs and answerers, and the host-wide index of open questions.

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] steps: steps hash
    KEYS[3] log: session log stream
    KEYS[4] questions: questions hash (questionId -> question JSON)
    KEYS[5] openQuestions: open questions index (sorted set, member = the open question member)
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] stepField: steps field
    ARGV[4] stepValue: step value JSON ({"questionId": ...})
    ARGV[5] record: harness.tool.ask record JSON
    ARGV[6] questionId
    ARGV[7] question: question JSON
    ARGV[8] now: now ms
    ARGV[9] openMember: open questions member

  Output:
    {'ok'} | {'exists', storedValue} | {'fenced', currentEpoch}
]]
local callsKey, stepsKey, logKey, questionsKey, openQuestionsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local toolCallId, epoch, stepField, stepValue, record = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local questionId, question, now, openMember = ARGV[6], ARGV[7], ARGV[8], ARGV[9]

--@include fence
local state, fenced = loadFence(callsKey, toolCallId, epoch)
if fenced then return fencedReply(state) end
local stored = redis.call('HGET', stepsKey, stepField)
if stored then return {'exists', stored} end
redis.call('HSET', stepsKey, stepField, stepValue)
redis.call('XADD', logKey, '*', 'r', record)
redis.call('HSETNX', questionsKey, questionId, question)
redis.call('ZADD', openQuestionsKey, now, openMember)
return {'ok'}
