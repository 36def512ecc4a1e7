--[[
  Appends records to a session log, unfenced (inputs, model responses, recovery notes).

  Input:
    KEYS[1] session log stream
    ARGV[1..n] record JSON, one entry each

  Output:
    array of the new stream ids, in order
]]
local ids = {}
for i = 1, #ARGV do
  ids[i] = redis.call('XADD', KEYS[1], '*', 'r', ARGV[i])
end
return ids
