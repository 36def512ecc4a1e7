--[[
  Settles a model call try's reservation in one budget scope with what the try spent (docs/spend.md,
  "Budgets"): the estimate leaves `held` and the actual spend joins `spent`. Once per reservation: a
  second settle (a command re-sent, a rerun settling a cut try) finds none and does nothing. A
  reservation its lease already counted as spent ('x') is corrected by the difference. A release is a
  settle with nothing spent.

  Input:
    KEYS[1] budget: the budget hash (reserveBudget.lua)
    ARGV[1] scope: 's' | 't' | 'p'
    ARGV[2] tryId
    ARGV[3] actual: '<cost> <tokens> <calls>', or '-': spent as reserved (a try cut by a crash: what it
            cost is unknown, and its reservation is what it could cost)

  Output:
    {'ok'} | {'none'}
]]
local key = KEYS[1]
local scope, tryId, actual = ARGV[1], ARGV[2], ARGV[3]
local METRICS = {'cost', 'tokens', 'calls'}
local field = scope .. '/r/' .. tryId
local value = redis.call('HGET', key, field)
if not value then return {'none'} end
local w, spent = {}, {}
for x in string.gmatch(value, '%S+') do table.insert(w, x) end
if actual == '-' then actual = w[2] .. ' ' .. w[3] .. ' ' .. w[4] end
for x in string.gmatch(actual, '%S+') do table.insert(spent, x) end
for k, metric in ipairs(METRICS) do
  local est = tonumber(w[k + 1])
  if w[1] == 'h' then
    redis.call('HINCRBY', key, scope .. '/held/' .. metric, 0 - est)
    redis.call('HINCRBY', key, scope .. '/spent/' .. metric, tonumber(spent[k]))
  else
    redis.call('HINCRBY', key, scope .. '/spent/' .. metric, tonumber(spent[k]) - est)
  end
end
redis.call('HDEL', key, field)
return {'ok'}
