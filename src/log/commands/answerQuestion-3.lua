--[[
  Records the first valid answer to an open question: harness.tool.answer in the log and the answer
  on the question, atomically. The caller validated the value against the question's schema.

  Input:
    KEYS[1] questions hash (questionId -> question JSON, questionId\0answer -> answer JSON)
    KEYS[2] session log stream
    KEYS[3] open questions index
    ARGV[1] questionId
    ARGV[2] answer value JSON
    ARGV[3] harness.tool.answer record JSON
    ARGV[4] now ms
    ARGV[5] open questions member

  Output:
    {'ok', entryId, toolCallId} | {'unknown'} | {'answered'} | {'expired'}
]]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
if redis.call('HEXISTS', KEYS[1], ARGV[1] .. '\0answer') == 1 then return {'answered'} end
local q = cjson.decode(raw)
if q.expiresAt and tonumber(ARGV[4]) >= tonumber(q.expiresAt) then return {'expired'} end
local id = redis.call('XADD', KEYS[2], '*', 'r', ARGV[3])
-- kept verbatim (never re-encoded by cjson) beside the question; its presence means answered
redis.call('HSET', KEYS[1], ARGV[1] .. '\0answer', ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[5])
return {'ok', id, q.toolCallId}
