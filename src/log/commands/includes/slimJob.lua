-- Slims the BullMQ hash of a job that parks delayed (docs/decisions/parked-call-memory.md). Its data
-- becomes `data` (what the job's id does not name: the call's input, turn, trace) and its options
-- lose the `"jobId":"<id>"` member BullMQ copies there (BullMQ never reads it back: the id is the
-- key). BullMQ's `priority` of 0 (every reader of it takes a missing one as 0) and `processedOn`
-- (set again when the job is next taken, read from the hash by no script) go. Every other field
-- (attempts made and started, stall count, parent, times, ...) stays as it is.
-- Redis keeps a hash as a listpack only while every value is under hash-max-listpack-value (64 B by
-- default) and never converts a hash table back: a hash whose values all fit then is written anew,
-- else its two fields are set in place (a large input is not copied through the script).
-- slimJob(jobKey, jobId, data)
local LISTPACK_VALUE = 64

local function withoutJobId(opts, jobId)
  local member = '"jobId":"' .. jobId .. '"'
  local at = string.find(opts, member, 1, true)
  if not at then return opts end
  local after = at + #member
  if string.sub(opts, after, after) == ',' then return string.sub(opts, 1, at - 1) .. string.sub(opts, after + 1) end
  if string.sub(opts, at - 1, at - 1) == ',' then return string.sub(opts, 1, at - 2) .. string.sub(opts, after) end
  return string.sub(opts, 1, at - 1) .. string.sub(opts, after)
end

-- the fields a parked job drops in place (a hash table: its values stay where they are)
local function slimInPlace(jobKey, data, opts)
  redis.call('HSET', jobKey, 'data', data, 'opts', opts)
  redis.call('HDEL', jobKey, 'processedOn')
  if redis.call('HGET', jobKey, 'priority') == '0' then redis.call('HDEL', jobKey, 'priority') end
end

local function slimJob(jobKey, jobId, data)
  local opts = redis.call('HGET', jobKey, 'opts')
  if not opts then return end
  opts = withoutJobId(opts, jobId)
  if #data > LISTPACK_VALUE or #opts > LISTPACK_VALUE then return slimInPlace(jobKey, data, opts) end
  local fields = redis.call('HGETALL', jobKey)
  local kept = {}
  for i = 1, #fields, 2 do
    local name, value = fields[i], fields[i + 1]
    if name == 'data' then
      value = data
    elseif name == 'opts' then
      value = opts
    elseif #value > LISTPACK_VALUE then
      return slimInPlace(jobKey, data, opts)
    end
    if name ~= 'processedOn' and not (name == 'priority' and value == '0') then
      kept[#kept + 1] = name
      kept[#kept + 1] = value
    end
  end
  redis.call('DEL', jobKey)
  redis.call('HSET', jobKey, unpack(kept))
end
