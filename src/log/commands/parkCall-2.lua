--[[
  Parks a running call (sleep or ask), fenced: a planned wait, not a crash (R14). The next attempt
  that begins sees 'parked' and resumes instead of classifying a cut.

  Input:
    KEYS[1] calls hash
    KEYS[2] session log stream
    ARGV[1] toolCallId
    ARGV[2] caller's epoch
    ARGV[3] harness.tool.suspended record JSON

  Output:
    {'ok'} | {'fenced', currentEpoch}
]]
--@include fence
if ownEpoch and state.s == 'parked' then return {'ok'} end
if fenced then return fencedReply() end
state.s = 'parked'
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(state))
redis.call('XADD', KEYS[2], '*', 'r', ARGV[3])
return {'ok'}
