--[[
  Settles an input once: logs harness.input.settled, closes the turn, and takes it out of the
  session's line; a model call try still marked on it (beginModelTry.lua: cut by a crash, or stopped
  by this settle) is counted first, as 'cut' with its estimate, since no later try of the turn will; the reply names the input now first in line, whose turn the caller enqueues. A
  settled turn leaves its session idle, so a small log gives back its unused bytes (includes/compactLog.lua).

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash
    KEYS[3] openTurns: open turns index
    KEYS[4] line: the session's open inputs in line
    KEYS[5] conversation: the session's conversation projection (includes/conversation.lua)
    KEYS[6] openIndex: the turns index of the input's harness, status 'open' (keys.ts turnIndexKey)
    KEYS[7] outcomeIndex: the turns index of the input's harness, status = the outcome
    KEYS[8] usage: the session's spend totals (includes/usage.lua)
    KEYS[9] usageDay: the harness's spend of the day in the session's shard (keys.ts usageDayKey)
    ARGV[1] inputId
    ARGV[2] record: harness.input.settled record JSON
    ARGV[3] openMember: open turns member
    ARGV[4] publish: 'PUBLISH', or 'SPUBLISH' on a Cluster
    ARGV[5] channel: events channel of the session's shard
    ARGV[6] messageKey: message key (formats.ts): PUBLISH "<key>\n<settled record>" wakes settled() waiters and
            tells workers to end the turn's running calls (the record's outcome is a field of it)
    ARGV[7] outcome: the outcome: 'completed' | 'failed' | 'aborted' (kept on the input: a rerun takes only failed or aborted)
    ARGV[8] now: now ms (the score of the turn in its outcome's index)

  Output:
    {'settled', entryId, nextInputId or ''} | {'already', settledEntryId, nextInputId or ''} | {'unknown'}
]]
local logKey, inputsKey, openTurnsKey, lineKey, convKey, openIndexKey, outcomeIndexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local inputId, record, openMember, publish, channel, messageKey = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local outcome, now = ARGV[7], ARGV[8]
local usageKey, usageDayKey = KEYS[8], KEYS[9]

--@include conversation
--@include compactLog
--@include usage
local existing = redis.call('HGET', inputsKey, inputId)
if not existing then return {'unknown'} end
local input = cjson.decode(existing)
if input.status == 'settled' then
  return {'already', input.settledId, redis.call('ZRANGE', lineKey, 0, 0)[1] or ''}
end
if type(input.trying) == 'table' then
  redis.call('XADD', logKey, '*', 'r', input.trying.record)
  countUsage(usageKey, usageDayKey, input.trying.counts, inputId, input.principal or '', input.trying.model or '')
  input.cut = input.trying.id
  input.trying = nil
end
local id = redis.call('XADD', logKey, '*', 'r', record)
indexConversation(convKey, logKey, id)
input.status = 'settled'
input.settledId = id
input.outcome = outcome
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
redis.call('ZREM', openTurnsKey, openMember)
redis.call('ZREM', openIndexKey, openMember)
redis.call('ZADD', outcomeIndexKey, now, openMember)
redis.call('ZREM', lineKey, inputId)
compactLog(logKey)
redis.call(publish, channel, messageKey .. '\n' .. record)
return {'settled', id, redis.call('ZRANGE', lineKey, 0, 0)[1] or ''}
