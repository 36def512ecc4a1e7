--[[
  Stages `append` records of the call, fenced. They enter the log only with the call's result
  (landResult); a 'safe' call that runs again after a crash discards them (beginCall). Records are
  staged by position: a resumed call runs from the top and appends the same records again, and a
  command re-sent after a reconnect arrives twice; positions already staged are skipped.

  Input:
    KEYS[1] calls hash
    KEYS[2] staged records list of this call
    ARGV[1] toolCallId
    ARGV[2] caller's epoch
    ARGV[3] position of the first record among the call's appends (0-based)
    ARGV[4..n] record JSON

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
--@include fence
if fenced then return fencedReply() end
local staged = redis.call('LLEN', KEYS[2])
for i = 4, #ARGV do
  if tonumber(ARGV[3]) + (i - 4) >= staged then redis.call('RPUSH', KEYS[2], ARGV[i]) end
end
return {'ok'}
