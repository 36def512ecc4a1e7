--[[
  Logs a record of a turn beside its model responses (harness.turn.retry, .paused, .resumed, .finish),
  only while the turn is open and, when the caller names it, has exactly the expected number of
  responses: a stale run of the turn (a presumed-dead job that was only slow) writes nothing. A
  paused record marks the input paused, a resumed one clears the mark (refused when not paused). A retry record must carry the
  next try number of its model call (input.retried = '<responses>:<attempt>' of the last one, cleared by
  a resume): two runs of one turn (a lock lost under load) cannot both log try N.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash
    KEYS[3] conversation: the session's conversation projection (includes/conversation.lua)
    ARGV[1] inputId
    ARGV[2] expected: number of responses the caller folded from the log, or '' for any
    ARGV[3] record: record JSON
    ARGV[4] mark: 'paused' | 'resumed' | '' (what the record does to the input's paused mark)
    ARGV[5] attempt: a retry record's attempt number, or ''

  Output:
    {'ok', entryId} | {'stale'} | {'unknown'} | {'settled'} | {'not_paused'}
]]
local logKey, inputsKey, convKey = KEYS[1], KEYS[2], KEYS[3]
local inputId, expected, record, mark, attempt = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

--@include conversation
local raw = redis.call('HGET', inputsKey, inputId)
if not raw then return {'unknown'} end
local input = cjson.decode(raw)
if input.status == 'settled' then return {'settled'} end
if expected ~= '' and tostring(input.responses or 0) ~= expected then return {'stale'} end
if mark == 'resumed' and not input.paused then return {'not_paused'} end
if attempt ~= '' then
  local last = 0
  if input.retried then
    local at, n = string.match(input.retried, '^(%d+):(%d+)$')
    if at == expected then last = tonumber(n) end
  end
  if tonumber(attempt) ~= last + 1 then return {'stale'} end
end
local id = redis.call('XADD', logKey, '*', 'r', record)
indexConversation(convKey, logKey, id)
if mark == 'paused' then input.paused = true end
if mark == 'resumed' then
  input.paused = nil
  input.retried = nil
end
if attempt ~= '' then input.retried = expected .. ':' .. attempt end
if mark ~= '' or attempt ~= '' then redis.call('HSET', inputsKey, inputId, cjson.encode(input)) end
return {'ok', id}
