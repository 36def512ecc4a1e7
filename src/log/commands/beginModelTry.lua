--[[
  Marks a model call try of a turn as begun (docs/spend.md, "Honest counting"): the input keeps the try
  (`trying`: its id, its estimated usage record and counts, and the budget reservations it holds) until
  the write that counts it (logModelResponse, logUsage) clears it. A try still marked when the next one
  begins was cut (its process died, or it was stopped, after the request was sent): it is counted here,
  once, as a 'cut' harness.usage record with its estimate, and the input remembers it (`cut`), so a
  late write of that try (a zombie) counts nothing more. It is written right before the request is
  sent, so a try refused by a budget or stopped before sending is never counted; it is sent without
  waiting, and a mark that arrives after the write that counted its try (`input.last`) sets nothing.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash
    KEYS[3] usage: the session's spend totals (includes/usage.lua)
    KEYS[4] usageDay: the harness's spend of the day in the session's shard (keys.ts usageDayKey)
    ARGV[1] inputId
    ARGV[2] try: JSON { id, record: the 'cut' usage record JSON, counts, model, holds: [[key, scope], ...] },
            or '' to count a cut try's mark only (before a reservation: its spend is then in the budget)

  Output:
    {'ok', cutTryJson or ''} | {'settled'} | {'unknown'}
]]
local logKey, inputsKey, usageKey, usageDayKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local inputId, try = ARGV[1], ARGV[2]

--@include usage
local raw = redis.call('HGET', inputsKey, inputId)
if not raw then return {'unknown'} end
local input = cjson.decode(raw)
if input.status == 'settled' and try ~= '' then return {'settled'} end
local cut = ''
local before = input.trying
if type(before) == 'table' then
  redis.call('XADD', logKey, '*', 'r', before.record)
  countUsage(usageKey, usageDayKey, before.counts, inputId, input.principal or '', before.model or '')
  input.cut = before.id
  cut = cjson.encode(before)
end
local mark = nil
if try ~= '' then mark = cjson.decode(try) end
-- a mark that arrives after the write that counted its try (it was sent without waiting) sets nothing
if mark and mark.id == input.last then mark = nil end
input.trying = mark
if cut ~= '' or try ~= '' then redis.call('HSET', inputsKey, inputId, cjson.encode(input)) end
return {'ok', cut}
