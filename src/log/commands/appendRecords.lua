--[[
  Appends records to a session log, unfenced (the sweeper's recovery notes).

  Input:
    KEYS[1] log: session log stream
    ARGV[1..] records: record JSON, one entry each

  Output:
    array of the new stream ids, in order
]]
local logKey = KEYS[1]

local ids = {}
for i = 1, #ARGV do
  ids[i] = redis.call('XADD', logKey, '*', 'r', ARGV[i])
end
return ids
