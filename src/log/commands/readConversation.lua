--[[
  Reads the session's conversation (includes/conversation.lua): the log entries its projection names,
  in log order, in one round trip. Costs O(the conversation), whatever else the log holds. With
  `since` 'compaction', from the read pointer of the session's latest compaction on (logCompaction:
  the entry right after the last cut turn's input), so a model view costs O(what it shows) however
  long the session is; the pointer's index is a hint, checked, and found again from the projection's
  tail when the projection moved (then kept).

  Input:
    KEYS[1] conversation: the session's conversation projection
    KEYS[2] log: session log stream
    KEYS[3] inputs: inputs hash (its "\0compaction" field: logCompaction)
    ARGV[1] since: 'all' | 'compaction'

  Output:
    {header, {{entryId, fields}, ...}, partial}: header '^' (complete), '^<id>' (entries before <id> are not
    in the projection yet) or '' (no projection yet); the entries as XRANGE returns them; partial '1'
    when the entries start at the latest compaction's read pointer, else '0'
]]
local convKey, logKey, inputsKey = KEYS[1], KEYS[2], KEYS[3]
local since = ARGV[1]

local header = redis.call('LINDEX', convKey, 0) or ''
local start, partial = 1, '0'
if since == 'compaction' and header == '^' then
  local raw = redis.call('HGET', inputsKey, '\0compaction')
  local pointer = raw and cjson.decode(raw)
  if pointer and pointer.from ~= '' then
    local len = redis.call('LLEN', convKey)
    -- a negative index: the list is walked from its nearer end, its tail
    if pointer.at < len and redis.call('LINDEX', convKey, pointer.at - len) == pointer.from then
      start, partial = pointer.at, '1'
    else
      local at = redis.call('LPOS', convKey, pointer.from, 'RANK', -1)
      if at then
        start, partial = at, '1'
        pointer.at = at
        redis.call('HSET', inputsKey, '\0compaction', cjson.encode(pointer))
      end
    end
  end
end
local ids
if start == 1 then
  ids = redis.call('LRANGE', convKey, 1, -1)
else
  ids = redis.call('LRANGE', convKey, start - redis.call('LLEN', convKey), -1)
end
local entries = {}
for i = 1, #ids do
  local entry = redis.call('XRANGE', logKey, ids[i], ids[i])[1]
  if entry then entries[#entries + 1] = entry end
end
return {header, entries, partial}
