-- Spend totals (docs/spend.md), written in the same script as the record of the model call try they
-- count, so a write the script refuses (stale, fenced) counts nothing, and one it makes counts once.
-- The session's usage hash: field '<scope>/<metric>/<name>', scope 't' (total, name ''), 'm' (model),
-- 'p' (principal), 'i' (turn: inputId); the name is the rest of the field after the second '/', so any
-- name maps to one field. The day hash of the harness (its shard's, KEYS usageDay, when given): field
-- '<metric>/<model length>/<model><principal>'.
-- counts: 'calls in out cached cacheWrite reasoning total costNanos estimated', integers.
-- countUsage(usageKey, dayKey or nil, counts, inputId, principal, model)
local USAGE_METRICS = {'calls', 'in', 'out', 'cached', 'cw', 'reason', 'total', 'cost', 'est'}
local function countUsage(usageKey, dayKey, counts, inputId, principal, model)
  local values = {}
  for v in string.gmatch(counts, '%d+') do table.insert(values, v) end
  local scopes = {{'t', ''}}
  if model ~= '' then table.insert(scopes, {'m', model}) end
  if principal ~= '' then table.insert(scopes, {'p', principal}) end
  if inputId ~= '' then table.insert(scopes, {'i', inputId}) end
  for k, metric in ipairs(USAGE_METRICS) do
    local value = values[k]
    if value and value ~= '0' then
      for _, scope in ipairs(scopes) do redis.call('HINCRBY', usageKey, scope[1] .. '/' .. metric .. '/' .. scope[2], value) end
      if dayKey then redis.call('HINCRBY', dayKey, metric .. '/' .. #model .. '/' .. model .. principal, value) end
    end
  end
end
