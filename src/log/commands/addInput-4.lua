--[[
  Logs a user input once per inputId (the same inputId twice runs once).

  Input:
    KEYS[1] session log stream
    KEYS[2] inputs hash (inputId -> {text, entryId, status, harness, at, responses})
    KEYS[3] sessions index (sorted set, score = last activity ms)
    KEYS[4] open turns index (sorted set, member = "<sid>|<inputId>", score = start ms)
    ARGV[1] inputId
    ARGV[2] text
    ARGV[3] harness.input record JSON
    ARGV[4] now ms
    ARGV[5] session id
    ARGV[6] harness name (the sweeper needs it to find the turn's queue)
    ARGV[7] parent call JSON ('' for none): the agent tool call this input answers, woken when it settles

  Output:
    {'added', entryId} | {'exists', entryId, status} | {'conflict'}
]]
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  local input = cjson.decode(existing)
  if input.text ~= ARGV[2] then return {'conflict'} end
  return {'exists', input.entryId, input.status}
end
local id = redis.call('XADD', KEYS[1], '*', 'r', ARGV[3])
local input = {text = ARGV[2], entryId = id, status = 'open', harness = ARGV[6], at = tonumber(ARGV[4])}
if ARGV[7] ~= '' then input.parent = cjson.decode(ARGV[7]) end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(input))
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[5] .. '|' .. ARGV[1])
return {'added', id}
