--[[
  A settled child agent's spend joins its tree's total at the root session (docs/spend.md "Trees"),
  once: the marker 'd\0<childSessionId>' is set in the same write, so the agent call that rolls it up
  again (a rerun after a crash before it landed) adds nothing. The root's 'd/<metric>/' fields sum
  every descendant's; session.usage() adds them to the root's own for its `tree` figures.

  Input:
    KEYS[1] usage: the root session's spend totals (includes/usage.lua)
    ARGV[1] child: the child agent's session id
    ARGV[2..] metricsAndValues: pairs of a metric (calls, in, out, ...) and the child's total of it

  Output:
    1 rolled up now | 0 rolled up before
]]
local usageKey, child = KEYS[1], ARGV[1]
if redis.call('HSETNX', usageKey, 'd\0' .. child, '1') == 0 then return 0 end
for i = 2, #ARGV, 2 do
  if ARGV[i + 1] ~= '0' then redis.call('HINCRBY', usageKey, 'd/' .. ARGV[i] .. '/', ARGV[i + 1]) end
end
return 1
