--[[
  host.sendEvent on its (event, key) hash (includes/eventHash.lua), atomically: a seen id is a
  duplicate (its waiters that have not taken the event yet are named again, so a sender's retry
  after a crash wakes them); a waiter whose schema the caller has not checked the payload against
  comes back to be checked (`check`; nothing written); with waiters, the event is delivered to each
  (a call's delivered field; a cancelOn turn's entry is removed); with none, it is kept for the
  retention, for the first wait that asks.

  Input:
    KEYS[1] eventHash: the (event, key) hash
    ARGV[1] uid: event uid
    ARGV[2] id: event id (de-duplication), or empty
    ARGV[3] payload: payload JSON
    ARGV[4] now: now ms
    ARGV[5] retentionMs: retention ms: how long a kept event and a seen id are kept
    ARGV[6] graceMs: grace ms of waiters (awaitEvent)
    ARGV[7..] checkedMembers: the waiter members whose schema accepted the payload

  Output:
    {'delivered', member, harness, ...} | {'stored'} | {'duplicate', member, harness, ...}
    | {'check', member, waiter value, ...}
]]
local key = KEYS[1]
local uid, id, payload, now, retention, grace = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

--@include eventHash

local fields = loadEventHash(key, now, grace)
local function harnessOf(waiter) return string.match(waiter, '^%d+\n([^\n]*)') end

if id ~= '' and fields['i\0' .. id] then
  local first = string.match(fields['i\0' .. id], '\n(.*)$')
  local reply = {'duplicate'}
  for field, value in pairs(fields) do
    if string.sub(field, 1, 2) == 'd\0' and string.match(value, '^([^\n]*)') == first then
      local member = string.sub(field, 3)
      local waiter = fields['w\0' .. member]
      if waiter then
        table.insert(reply, member)
        table.insert(reply, harnessOf(waiter))
      end
    end
  end
  return reply
end

local checked = {}
for i = 7, #ARGV do checked[ARGV[i]] = true end
local waiting, unchecked = {}, {'check'}
for field, value in pairs(fields) do
  if string.sub(field, 1, 2) == 'w\0' then
    local member = string.sub(field, 3)
    if not fields['d\0' .. member] then
      table.insert(waiting, {member = member, waiter = value})
      if not checked[member] then
        table.insert(unchecked, member)
        table.insert(unchecked, value)
      end
    end
  end
end
if #unchecked > 1 then return unchecked end

if id ~= '' then
  redis.call('HSET', key, 'i\0' .. id, (now + retention) .. '\n' .. uid)
  fields['i\0' .. id] = (now + retention) .. '\n' .. uid
end
if #waiting == 0 then
  local value = (now + retention) .. '\n' .. id .. '\n' .. payload
  redis.call('HSET', key, 'e\0' .. uid, value)
  fields['e\0' .. uid] = value
  keepEventHash(key, fields, now, grace)
  return {'stored'}
end
local reply = {'delivered'}
for _, w in ipairs(waiting) do
  if string.sub(w.member, 1, 2) == 't|' then
    redis.call('HDEL', key, 'w\0' .. w.member)
    fields['w\0' .. w.member] = nil
  else
    redis.call('HSET', key, 'd\0' .. w.member, uid .. '\n' .. payload)
  end
  table.insert(reply, w.member)
  table.insert(reply, harnessOf(w.waiter))
end
keepEventHash(key, fields, now, grace)
return reply
