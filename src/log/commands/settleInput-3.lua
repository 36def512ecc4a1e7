--[[
  Settles an input once: logs harness.input.settled and closes the turn.

  Input:
    KEYS[1] session log stream
    KEYS[2] inputs hash
    KEYS[3] open turns index
    ARGV[1] inputId
    ARGV[2] harness.input.settled record JSON
    ARGV[3] open turns member "<sid>|<inputId>"
    ARGV[4] events channel: PUBLISH "input|<member>\n<settled record>" wakes settled() waiters

  Output:
    {'settled', entryId} | {'already', settledEntryId} | {'unknown'}
]]
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if not existing then return {'unknown'} end
local input = cjson.decode(existing)
if input.status == 'settled' then return {'already', input.settledId} end
local id = redis.call('XADD', KEYS[1], '*', 'r', ARGV[2])
input.status = 'settled'
input.settledId = id
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(input))
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('PUBLISH', ARGV[4], 'input|' .. ARGV[3] .. '\n' .. ARGV[2])
return {'settled', id}
