-- A session's place in its shard's trim index (compaction.trimAfter), set by a retention pass from a
-- plan it read before: only while the session's latest compaction is the one that plan saw. A
-- compaction logged since has put the session in the index itself (logCompaction.lua, ZADD NX); a
-- removal or a later time from the older plan would lose it.
-- rescheduleTrim(inputsKey, trimsKey, sessionId, latest, due): due '' leaves the index, else its time.
local function rescheduleTrim(inputsKey, trimsKey, sessionId, latest, due)
  local pointer = redis.call('HGET', inputsKey, '\0compaction')
  local now = pointer and cjson.decode(pointer).id or ''
  if now ~= latest then return end
  if due == '' then
    redis.call('ZREM', trimsKey, sessionId)
  else
    redis.call('ZADD', trimsKey, due, sessionId)
  end
end
