--[[
  Reserves a model call try's estimated spend in one budget scope (docs/spend.md, "Budgets"), unless the
  scope's spent plus held plus the estimate would pass a ceiling. Atomic, so racing workers on any
  machine cannot reserve past it together. Fields of the hash, per scope letter S ('s' session, 't'
  tree, 'p' principal) and metric M ('cost' nano-USD, 'tokens', 'calls'): S/spent/M, S/held/M,
  S/max/M (a tree's ceilings, stored by its root's turns for the turns of child sessions), and
  S/r/<tryId> = 'h <cost> <tokens> <calls> <deadline ms>' per reservation. A reservation past its
  deadline (its process died after the try was counted) is counted as spent at its estimate and marked
  'x <cost> <tokens> <calls> <at>'; a late settle corrects it, and the mark goes a day later.

  Input:
    KEYS[1] budget: the budget hash
    ARGV[1] scope: 's' | 't' | 'p'
    ARGV[2] tryId
    ARGV[3] estimate: '<cost> <tokens> <calls>'
    ARGV[4] max: '<cost> <tokens> <calls>', '-' for no ceiling (a tree's stored one is used then)
    ARGV[5] storeMax: '1' to store max as the scope's ceilings (a tree's root), else ''
    ARGV[6] leaseMs: how long the reservation holds before it is counted as spent
    ARGV[7] ttlMs: the key's expiry (a principal's period), or ''
    ARGV[8] onExceeded: 'pause' | 'fail' | '' (none given: a tree's stored one is used, else 'pause');
            stored with the ceilings (S/on)

  Output:
    {'ok'} | {'held'} (this try reserved already) | {'over', metric, max, spent, held, estimate, onExceeded}
]]
local key = KEYS[1]
local scope, tryId, estimate, max, storeMax, leaseMs, ttlMs, onExceeded = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local METRICS = {'cost', 'tokens', 'calls'}
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function words(s)
  local list = {}
  for w in string.gmatch(s, '%S+') do table.insert(list, w) end
  return list
end

local prefix = scope .. '/r/'
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  if string.sub(field, 1, #prefix) == prefix then
    local w = words(value)
    if w[1] == 'h' and tonumber(w[5]) < now then
      for k, metric in ipairs(METRICS) do
        redis.call('HINCRBY', key, scope .. '/held/' .. metric, 0 - tonumber(w[k + 1]))
        redis.call('HINCRBY', key, scope .. '/spent/' .. metric, tonumber(w[k + 1]))
      end
      redis.call('HSET', key, field, 'x ' .. w[2] .. ' ' .. w[3] .. ' ' .. w[4] .. ' ' .. now)
    elseif w[1] == 'x' and tonumber(w[5]) + 86400000 < now then
      redis.call('HDEL', key, field)
    end
  end
end
if redis.call('HEXISTS', key, prefix .. tryId) == 1 then return {'held'} end

local est, maxes = words(estimate), words(max)
for k, metric in ipairs(METRICS) do
  local ceiling = maxes[k]
  if ceiling == '-' or ceiling == nil then ceiling = redis.call('HGET', key, scope .. '/max/' .. metric) end
  if ceiling then
    local spent = tonumber(redis.call('HGET', key, scope .. '/spent/' .. metric) or '0')
    local held = tonumber(redis.call('HGET', key, scope .. '/held/' .. metric) or '0')
    if spent + held + tonumber(est[k]) > tonumber(ceiling) then
      local on = onExceeded
      if on == '' then on = redis.call('HGET', key, scope .. '/on') or 'pause' end
      return {'over', metric, tostring(ceiling), tostring(spent), tostring(held), est[k], on}
    end
  end
end
for k, metric in ipairs(METRICS) do
  redis.call('HINCRBY', key, scope .. '/held/' .. metric, est[k])
  if storeMax == '1' then
    if maxes[k] ~= '-' then redis.call('HSET', key, scope .. '/max/' .. metric, maxes[k])
    else redis.call('HDEL', key, scope .. '/max/' .. metric) end
  end
end
if storeMax == '1' and onExceeded ~= '' then redis.call('HSET', key, scope .. '/on', onExceeded) end
redis.call('HSET', key, prefix .. tryId, 'h ' .. estimate .. ' ' .. (now + tonumber(leaseMs)))
if ttlMs ~= '' then redis.call('PEXPIRE', key, ttlMs) end
return {'ok'}
