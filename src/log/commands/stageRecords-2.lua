--[[
  Stages `append` records of the current attempt, fenced. They enter the log only with the call's
  result (landResult); a 'safe' call that runs again discards them (beginCall).

  Input:
    KEYS[1] calls hash
    KEYS[2] staged records list of this call
    ARGV[1] toolCallId
    ARGV[2] caller's epoch
    ARGV[3..n] record JSON

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
--@include fence
if fenced then return fencedReply() end
for i = 3, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
return {'ok'}
