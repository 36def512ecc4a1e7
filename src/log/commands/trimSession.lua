--[[
  Trimming (compaction.trimAfter): removes from Redis a session's log entries before `cut`, after the
  caller exported them, with what only they used: the settled inputs, landed calls, their steps and
  questions whose every entry lies before the cut, their entries in the turns indexes, their turns'
  spend in the session's usage hash (the session's totals stay), their calls' places in the fan-out
  trees and their ids in the conversation projection. Nothing is removed when one of those items is open again (a rerun
  since the caller looked): the caller looks again later. The view never reads before the cut: the
  caller cuts at or before the input of the last turn a compaction took out of the view.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash ("\0compaction": the read pointer; "\0trimmed": what trimming took)
    KEYS[3] calls: calls hash
    KEYS[4] steps: steps hash
    KEYS[5] questions: questions hash
    KEYS[6] conversation: the session's conversation projection
    KEYS[7] trims: the shard's trim index (member sessionId, score: when it is due)
    KEYS[8] usage: the session's spend totals (includes/usage.lua): the removed turns' fields go
    KEYS[9] tree: the session's fan-out trees (addChild.lua): a removed call's place, cancel mark and,
      for a root, its count and start go (its tree settled: the call landed)
    KEYS[10..] turnIndexes: the turns, tool and tag indexes the trimmed inputs are in (keys.ts namedIndexKeys)
    ARGV[1] sessionId: the session id
    ARGV[2] cut: the first entry id kept
    ARGV[3] inputIds: JSON array of the input ids removed
    ARGV[4] toolCallIds: JSON array of the tool call ids removed
    ARGV[5] steps: JSON array of [toolCallId, stepName] pairs removed
    ARGV[6] questionIds: JSON array of the question ids removed
    ARGV[7] nextDue: when the session is due again (ms; '' when no compaction waits: it leaves the index)
    ARGV[8] latest: the entry id of the latest compaction the caller read (includes/trimIndex.lua)

  Output:
    {'trimmed', entriesRemoved} | {'open', id} (an item is open again: nothing removed)
]]
local logKey, inputsKey, callsKey, stepsKey, questionsKey, convKey, trimsKey, usageKey, treeKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local sessionId, cut, nextDue, latest = ARGV[1], ARGV[2], ARGV[7], ARGV[8]
local inputIds, callIds, steps, questionIds =
  cjson.decode(ARGV[3]), cjson.decode(ARGV[4]), cjson.decode(ARGV[5]), cjson.decode(ARGV[6])

--@include usage
--@include trimIndex

local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end

local inputs = {}
for i, inputId in ipairs(inputIds) do
  local raw = redis.call('HGET', inputsKey, inputId)
  local input = raw and cjson.decode(raw)
  if input and input.status ~= 'settled' then return {'open', inputId} end
  inputs[i] = input
end
for _, toolCallId in ipairs(callIds) do
  local raw = redis.call('HGET', callsKey, toolCallId)
  local state = raw and cjson.decode(raw).s
  if state ~= 'done' and state ~= 'again' and (raw or redis.call('HEXISTS', callsKey, toolCallId .. '\0req') == 1) then
    return {'open', toolCallId}
  end
end

local removed = redis.call('XTRIM', logKey, 'MINID', cut)
-- the projection loses the ids before the cut; its head ('^': it holds every such record) stays
local head = redis.call('LPOP', convKey)
local popped = 0
if head then
  while true do
    local id = redis.call('LINDEX', convKey, 0)
    if not id or not before(id, cut) then break end
    redis.call('LPOP', convKey)
    popped = popped + 1
  end
  redis.call('LPUSH', convKey, head)
end
local raw = redis.call('HGET', inputsKey, '\0compaction')
if raw and popped > 0 then
  local pointer = cjson.decode(raw)
  pointer.at = math.max(1, pointer.at - popped)
  redis.call('HSET', inputsKey, '\0compaction', cjson.encode(pointer))
end
for i, inputId in ipairs(inputIds) do
  if inputs[i] then
    for k = 10, #KEYS do redis.call('ZREM', KEYS[k], sessionId .. '|' .. inputId) end
    redis.call('HDEL', inputsKey, inputId)
    for _, metric in ipairs(USAGE_METRICS) do redis.call('HDEL', usageKey, 'i/' .. metric .. '/' .. inputId) end
  end
end
for _, toolCallId in ipairs(callIds) do
  redis.call('HDEL', callsKey, toolCallId, toolCallId .. '\0req', toolCallId .. '\0names', toolCallId .. '\0result')
  redis.call('HDEL', treeKey, toolCallId, toolCallId .. '\0x', toolCallId .. '\0n', toolCallId .. '\0t')
end
for _, step in ipairs(steps) do
  redis.call('HDEL', stepsKey, step[1] .. '\0' .. step[2], '\0retry\0' .. step[1] .. '\0' .. step[2])
end
for _, questionId in ipairs(questionIds) do redis.call('HDEL', questionsKey, questionId) end
local trimmed = cjson.decode(redis.call('HGET', inputsKey, '\0trimmed') or '{"entries":0}')
trimmed.before, trimmed.entries = cut, trimmed.entries + removed
redis.call('HSET', inputsKey, '\0trimmed', cjson.encode(trimmed))
rescheduleTrim(inputsKey, trimsKey, sessionId, latest, nextDue)
return {'trimmed', removed}
