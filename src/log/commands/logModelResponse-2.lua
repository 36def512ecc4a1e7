--[[
  Logs a model response of a turn, only if the turn has exactly the expected number of responses
  logged: two runs of one turn (a presumed-dead job that was only slow) cannot both log a batch.

  Input:
    KEYS[1] session log stream
    KEYS[2] inputs hash
    ARGV[1] inputId
    ARGV[2] number of responses the caller folded from the log
    ARGV[3] harness.model.response record JSON

  Output:
    {'ok', entryId} | {'stale'} | {'unknown'}
]]
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return {'unknown'} end
local input = cjson.decode(raw)
if input.status == 'settled' or tostring(input.responses or 0) ~= ARGV[2] then return {'stale'} end
local id = redis.call('XADD', KEYS[1], '*', 'r', ARGV[3])
input.responses = (input.responses or 0) + 1
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(input))
return {'ok', id}
