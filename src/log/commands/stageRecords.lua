--[[
  Stages `append` records of the call, fenced. They enter the log only with the call's result
  (landResult); a 'safe' call that runs again after a crash discards them (beginCall). Records are
  staged by position: a resumed call runs from the top and appends the same records again, and a
  command re-sent after a reconnect arrives twice; positions already staged are skipped.

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] staged: staged records list of this call
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] first: position of the first record among the call's appends (0-based)
    ARGV[4..] records: record JSON

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
local callsKey, stagedKey = KEYS[1], KEYS[2]
local toolCallId, epoch, first = ARGV[1], ARGV[2], tonumber(ARGV[3])

--@include fence
local state, fenced = loadFence(callsKey, toolCallId, epoch)
if fenced then return fencedReply(state) end
local staged = redis.call('LLEN', stagedKey)
for i = 4, #ARGV do
  if first + (i - 4) >= staged then redis.call('RPUSH', stagedKey, ARGV[i]) end
end
return {'ok'}
