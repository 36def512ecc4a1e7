--[[
  Logs a user input once per inputId (the same inputId twice runs once).

  Input:
    KEYS[1] session log stream
    KEYS[2] inputs hash (inputId -> {text, entryId, status, harness, at, responses, parent?, context?})
    KEYS[3] sessions index (sorted set, score = last activity ms)
    KEYS[4] open turns index (sorted set, member = the open turn member, score = start ms)
    ARGV[1] inputId
    ARGV[2] text
    ARGV[3] harness.input record JSON
    ARGV[4] now ms
    ARGV[5] session id (member of the sessions index)
    ARGV[6] open turns member (formats.ts)
    ARGV[7] harness name (the sweeper needs it to find the turn's queue)
    ARGV[8] parent call JSON ('' for none): the agent tool call this input answers, woken when it settles
    ARGV[9] the input's context JSON ('' for none), kept as a string (verbatim: cjson would turn [] into {})

  Output:
    {'added', entryId} | {'exists', entryId, status} | {'conflict'}
]]
local logKey, inputsKey, sessionsKey, openTurnsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local inputId, text, record, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local sessionId, openMember, harness, parent, context = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]

local existing = redis.call('HGET', inputsKey, inputId)
if existing then
  local input = cjson.decode(existing)
  if input.text ~= text then return {'conflict'} end
  return {'exists', input.entryId, input.status}
end
local id = redis.call('XADD', logKey, '*', 'r', record)
local input = {text = text, entryId = id, status = 'open', harness = harness, at = tonumber(now)}
if parent ~= '' then input.parent = cjson.decode(parent) end
if context ~= '' then input.context = context end
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
redis.call('ZADD', sessionsKey, now, sessionId)
redis.call('ZADD', openTurnsKey, now, openMember)
return {'added', id}
