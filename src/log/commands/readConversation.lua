--[[
  Reads the session's conversation (includes/conversation.lua): the log entries its projection names,
  in log order, in one round trip. Costs O(the conversation), whatever else the log holds.

  Input:
    KEYS[1] conversation: the session's conversation projection
    KEYS[2] log: session log stream

  Output:
    {header, {{entryId, fields}, ...}}: header '^' (complete), '^<id>' (entries before <id> are not
    in the projection yet) or '' (no projection yet); the entries as XRANGE returns them
]]
local convKey, logKey = KEYS[1], KEYS[2]

local ids = redis.call('LRANGE', convKey, 0, -1)
local entries = {}
for i = 2, #ids do
  local entry = redis.call('XRANGE', logKey, ids[i], ids[i])[1]
  if entry then entries[#entries + 1] = entry end
end
return {ids[1] or '', entries}
