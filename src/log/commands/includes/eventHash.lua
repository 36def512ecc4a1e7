-- The hash of one (event, key) (src/log/eventWaits.ts), its fields by their first letter:
--   w\0<member>  a waiting call ('c|<sid>|<toolCallId>|<step>') or turn ('t|<sid>|<inputId>', cancelOn):
--                '<until ms>\n<harness>\n<'#' and the digest of the payload's JSON Schema in <prefix>:ev-schemas, or empty>'
--   d\0<member>  the event delivered to that waiter: '<event uid>\n<payload JSON>'
--   e\0<uid>     an event that came before any wait: '<forget at ms>\n<id or empty>\n<payload JSON>'
--   i\0<id>      a seen event id: '<forget at ms>\n<event uid>'
-- The sender's retention is in the times of `e` and `i` fields; `grace` keeps a waiter's entries that
-- long past its until (its call wakes at the until and takes a delivered event then).
-- loadEventHash(key, now, grace) drops what outlived its time and returns the rest as a field -> value table.
-- keepEventHash(key, fields, now) sets the key's expiry to the last time one of its fields is needed.
-- deliveredTo(fields, member) is {'event', uid, payload} of the event delivered to that waiter, or nil.
local function expiryOf(field, value, grace)
  local kind = string.sub(field, 1, 1)
  local first = tonumber(string.match(value, '^(%d+)'))
  if kind == 'w' then return first + grace end
  if kind == 'e' or kind == 'i' then return first end
  return nil
end

local function loadEventHash(key, now, grace)
  local all = redis.call('HGETALL', key)
  local fields = {}
  for i = 1, #all, 2 do fields[all[i]] = all[i + 1] end
  for field, value in pairs(fields) do
    local expiry = expiryOf(field, value, grace)
    if expiry ~= nil and expiry <= now then
      redis.call('HDEL', key, field)
      fields[field] = nil
      if string.sub(field, 1, 1) == 'w' then
        local delivered = 'd' .. string.sub(field, 2)
        redis.call('HDEL', key, delivered)
        fields[delivered] = nil
      end
    end
  end
  return fields
end

local function keepEventHash(key, fields, now, grace)
  local last = 0
  for field, value in pairs(fields) do
    local expiry = expiryOf(field, value, grace)
    if expiry ~= nil and expiry > last then last = expiry end
  end
  if last > now then redis.call('PEXPIREAT', key, last) end
end

local function deliveredTo(fields, member)
  local delivered = fields['d\0' .. member]
  if not delivered then return nil end
  local uid, payload = string.match(delivered, '^([^\n]*)\n(.*)$')
  return {'event', uid, payload}
end
