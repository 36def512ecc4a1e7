--[[
  Logs a model response of a turn, only if the turn has exactly the expected number of responses
  logged: two runs of one turn (a presumed-dead job that was only slow) cannot both log a batch.
  The response's tool calls are marked used under their stored ids in the same write; an id some
  other writer took meanwhile refuses the whole write ('taken'), and the caller picks ids again.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash
    KEYS[3] calls: calls hash ("<toolCallId>\0req" -> fingerprint of the call's tool and input)
    KEYS[4] conversation: the session's conversation projection (includes/conversation.lua)
    KEYS[5] usage: the session's spend totals (includes/usage.lua)
    KEYS[6] usageDay: the harness's spend of the day in the session's shard (keys.ts usageDayKey)
    KEYS[7..] toolIndexes: the tool indexes of the turn's harness (keys.ts turnToolIndexKey), one per tool the
            response calls: the turn joins them, scored by when it was prompted (host.turns({ tool }))
    ARGV[1] inputId
    ARGV[2] expected: number of responses the caller folded from the log
    ARGV[3] record: harness.model.response record JSON
    ARGV[4] member: the turn's member in the turns indexes (formats.ts openMember)
    ARGV[5] tools: the tool names of KEYS[5..] as a JSON array (kept on the input: retention names their indexes)
    ARGV[6] counts: the call's usage counts (includes/usage.lua): counted with the record, once
    ARGV[7] model: the model the call was sent to ('' unknown)
    ARGV[8] tryId: the model call try (beginModelTry.lua), or '': its mark leaves the input (`last`
            remembers it: a mark that lands after this write sets nothing); a try counted as cut
            already (`input.cut`) logs its response but counts nothing more
    ARGV[9..] idsAndFingerprints: pairs: stored tool call id, fingerprint

  Output:
    {'ok', entryId} | {'stale'} | {'unknown'} | {'taken', toolCallId}
]]
local logKey, inputsKey, callsKey, convKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local usageKey, usageDayKey = KEYS[5], KEYS[6]
local inputId, expected, record, member, tools, counts, model, tryId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]

--@include conversation
--@include usage
local raw = redis.call('HGET', inputsKey, inputId)
if not raw then return {'unknown'} end
local input = cjson.decode(raw)
if input.status == 'settled' or tostring(input.responses or 0) ~= expected then return {'stale'} end
for i = 9, #ARGV, 2 do
  if redis.call('HEXISTS', callsKey, ARGV[i] .. '\0req') == 1 then return {'taken', ARGV[i]} end
end
for i = 9, #ARGV, 2 do redis.call('HSET', callsKey, ARGV[i] .. '\0req', ARGV[i + 1]) end
local id = redis.call('XADD', logKey, '*', 'r', record)
indexConversation(convKey, logKey, id)
input.responses = (input.responses or 0) + 1
if #KEYS > 6 then
  local known = {}
  input.tools = input.tools or {}
  for _, name in ipairs(input.tools) do known[name] = true end
  for _, name in ipairs(cjson.decode(tools)) do
    if not known[name] then
      known[name] = true
      table.insert(input.tools, name)
    end
  end
  for k = 7, #KEYS do redis.call('ZADD', KEYS[k], input.at or 0, member) end
end
local counted = tryId == '' or input.cut ~= tryId
if tryId ~= '' then
  if type(input.trying) == 'table' and input.trying.id == tryId then input.trying = nil end
  input.last = tryId
end
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
if counted then countUsage(usageKey, usageDayKey, counts, inputId, input.principal or '', model) end
return {'ok', id}
