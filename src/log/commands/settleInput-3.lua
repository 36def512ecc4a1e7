--[[
  Settles an input once: logs harness.input.settled and closes the turn.

  Input:
    KEYS[1] session log stream
    KEYS[2] inputs hash
    KEYS[3] open turns index
    ARGV[1] inputId
    ARGV[2] harness.input.settled record JSON
    ARGV[3] open turns member
    ARGV[4] events channel
    ARGV[5] message key (formats.ts): PUBLISH "<key>\n<settled record>" wakes settled() waiters and
            tells workers to end the turn's running calls (the record's outcome is a field of it)

  Output:
    {'settled', entryId} | {'already', settledEntryId} | {'unknown'}
]]
local logKey, inputsKey, openTurnsKey = KEYS[1], KEYS[2], KEYS[3]
local inputId, record, openMember, channel, messageKey = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local existing = redis.call('HGET', inputsKey, inputId)
if not existing then return {'unknown'} end
local input = cjson.decode(existing)
if input.status == 'settled' then return {'already', input.settledId} end
local id = redis.call('XADD', logKey, '*', 'r', record)
input.status = 'settled'
input.settledId = id
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
redis.call('ZREM', openTurnsKey, openMember)
redis.call('PUBLISH', channel, messageKey .. '\n' .. record)
return {'settled', id}
