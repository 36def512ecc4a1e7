--[[
  Seeds the spend totals of a session from before issue 55 (its usage hash was never marked whole):
  session.usage() summed its log once up to `lastId` and writes the sums here, replacing what the
  hash counted meanwhile (those calls are in the log sum too), only while the log still ends at
  `lastId`: a write since then would be lost, so the caller sums again.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] usage: the session's spend totals (includes/usage.lua)
    ARGV[1] lastId: the id of the log's last entry the sums read ('' for an empty log)
    ARGV[2..] fieldsAndValues: pairs: totals field, value

  Output:
    {'ok'} | {'moved'} | {'whole'} (already whole: nothing written)
]]
local logKey, usageKey = KEYS[1], KEYS[2]
local lastId = ARGV[1]

if redis.call('HEXISTS', usageKey, 'x/v/') == 1 then return {'whole'} end
local last = redis.call('XREVRANGE', logKey, '+', '-', 'COUNT', 1)[1]
if (last and last[1] or '') ~= lastId then return {'moved'} end
redis.call('DEL', usageKey)
for i = 2, #ARGV, 2 do redis.call('HSET', usageKey, ARGV[i], ARGV[i + 1]) end
redis.call('HSET', usageKey, 'x/v/', '1')
return {'ok'}
