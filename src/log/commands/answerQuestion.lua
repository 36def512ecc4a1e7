--[[
  Records the first valid answer to an open question: harness.tool.answer in the log and the answer
  on the question, atomically. The caller validated the value against the question's schema.

  Input:
    KEYS[1] questions: questions hash (questionId -> question JSON, questionId\0answer -> answer JSON)
    KEYS[2] log: session log stream
    KEYS[3] openQuestions: open questions index
    ARGV[1] questionId
    ARGV[2] answer: answer value JSON
    ARGV[3] record: harness.tool.answer record JSON
    ARGV[4] now: now ms
    ARGV[5] openMember: open questions member

  Output:
    {'ok', entryId, toolCallId} | {'unknown'} | {'answered'} | {'expired'} | {'closed'} (its call was cancelled)
]]
local questionsKey, logKey, openQuestionsKey = KEYS[1], KEYS[2], KEYS[3]
local questionId, answer, record, now, openMember = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local answerField = questionId .. '\0answer'

local raw = redis.call('HGET', questionsKey, questionId)
if not raw then return {'unknown'} end
if redis.call('HEXISTS', questionsKey, answerField) == 1 then return {'answered'} end
if redis.call('HEXISTS', questionsKey, questionId .. '\0closed') == 1 then return {'closed'} end
local q = cjson.decode(raw)
if q.expiresAt and tonumber(now) >= tonumber(q.expiresAt) then return {'expired'} end
local id = redis.call('XADD', logKey, '*', 'r', record)
-- kept verbatim (never re-encoded by cjson) beside the question; its presence means answered
redis.call('HSET', questionsKey, answerField, answer)
redis.call('ZREM', openQuestionsKey, openMember)
return {'ok', id, q.toolCallId}
