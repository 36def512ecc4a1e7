--[[
  A call's step.waitForEvent asks its (event, key) hash (includes/eventHash.lua), atomically:
  the event delivered to it if there is one; else the oldest kept event its schema accepts is
  consumed (moved to the waiter's delivered field, so a crash before the tool stored it finds it
  again); else, past its timeout, it stops waiting; else it registers as a waiter. Kept events the
  caller has not checked against its schema yet come back to be checked (`check`), since the schema
  is the tool's (any Standard Schema) and runs in TypeScript. Order: delivered, kept, timeout, wait.

  Input:
    KEYS[1] eventHash: the (event, key) hash
    ARGV[1] member: waiter member 'c|<sid>|<toolCallId>|<step>'
    ARGV[2] waiter: waiter value '<until>\n<harness>\n<schema reference or empty>' (includes/eventHash.lua)
    ARGV[3] now: now ms
    ARGV[4] graceMs: grace ms: how long past its until a waiter's entries are kept
    ARGV[5] expired: '1' when now >= until (the timeout passed)
    ARGV[6..] verdicts: pairs of a kept event uid and the caller's verdict on it: 'ok' | 'no'

  Output:
    {'event', uid, payload} | {'timeout'} | {'waiting'} | {'check', uid, payload, uid, payload, ...}
]]
local key = KEYS[1]
local member, waiter, now, grace, expired = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]

--@include eventHash

local fields = loadEventHash(key, now, grace)
local delivered = deliveredTo(fields, member)
if delivered then return delivered end
local verdicts = {}
for i = 6, #ARGV, 2 do verdicts[ARGV[i]] = ARGV[i + 1] end
local kept = {}
for field, value in pairs(fields) do
  if string.sub(field, 1, 2) == 'e\0' then
    local at, id, payload = string.match(value, '^(%d+)\n([^\n]*)\n(.*)$') -- at: its forget time, in arrival order
    table.insert(kept, {uid = string.sub(field, 3), at = tonumber(at), payload = payload})
  end
end
table.sort(kept, function(a, b) return a.at < b.at end)
local unchecked = {}
for _, event in ipairs(kept) do
  local verdict = verdicts[event.uid]
  if verdict == 'ok' and #unchecked == 0 then
    -- consumed by this wait: no other wait takes it
    redis.call('HDEL', key, 'e\0' .. event.uid)
    fields['e\0' .. event.uid] = nil
    redis.call('HSET', key, 'w\0' .. member, waiter, 'd\0' .. member, event.uid .. '\n' .. event.payload)
    fields['w\0' .. member] = waiter
    keepEventHash(key, fields, now, grace)
    return {'event', event.uid, event.payload}
  end
  if verdict == nil then
    table.insert(unchecked, event.uid)
    table.insert(unchecked, event.payload)
  end
end
if #unchecked > 0 then
  table.insert(unchecked, 1, 'check')
  return unchecked
end
-- past the timeout (checked after the kept events: one that came before the wait is still taken)
if expired == '1' then
  redis.call('HDEL', key, 'w\0' .. member)
  return {'timeout'}
end
redis.call('HSET', key, 'w\0' .. member, waiter)
fields['w\0' .. member] = waiter
keepEventHash(key, fields, now, grace)
return {'waiting'}
