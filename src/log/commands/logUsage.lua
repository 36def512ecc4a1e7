--[[
  Counts a model call try that has no model response in the log (docs/spend.md): a harness.usage
  record and the spend totals in one write, once per state of the turn the try was made from
  (`progress`: its responses and turn records folded, which every try's outcome moves on), so a
  command re-sent after a reconnect, or a second run of the turn from the same state, counts nothing.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash
    KEYS[3] usage: the session's spend totals (includes/usage.lua)
    KEYS[4] usageDay: the harness's spend of the day in the session's shard (keys.ts usageDayKey)
    ARGV[1] inputId
    ARGV[2] progress: the turn's responses + turn records the try was made from
    ARGV[3] record: harness.usage record JSON
    ARGV[4] counts: the try's usage counts (includes/usage.lua)
    ARGV[5] model: the model the try was sent to ('' unknown)
    ARGV[6] tryId: the model call try (beginModelTry.lua), or '': its mark leaves the input (`last`
            remembers it); a try counted as cut already counts nothing more

  Output:
    {'ok', entryId} | {'counted'} | {'unknown'}
]]
local logKey, inputsKey, usageKey, usageDayKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local inputId, progress, record, counts, model, tryId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

--@include usage
local raw = redis.call('HGET', inputsKey, inputId)
if not raw then return {'unknown'} end
local input = cjson.decode(raw)
if tryId ~= '' then
  if type(input.trying) == 'table' and input.trying.id == tryId then input.trying = nil end
  input.last = tryId
end
if (input.counted and tonumber(input.counted) >= tonumber(progress)) or (tryId ~= '' and input.cut == tryId) then
  redis.call('HSET', inputsKey, inputId, cjson.encode(input))
  return {'counted'}
end
local id = redis.call('XADD', logKey, '*', 'r', record)
input.counted = tonumber(progress)
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
countUsage(usageKey, usageDayKey, counts, inputId, input.principal or '', model)
return {'ok', id}
