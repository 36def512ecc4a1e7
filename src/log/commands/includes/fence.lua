-- Loads the state of call ARGV[1] from the calls hash (KEYS[1]) and checks the caller's epoch.
-- Defines: state (table or nil), fenced (true when ARGV[2] is not the current epoch of a running call),
-- ownEpoch (ARGV[2] is the current epoch, whatever the status: a command re-sent after a reconnect
-- finds its own earlier write and answers as that write did).
local stateJson = redis.call('HGET', KEYS[1], ARGV[1])
local state = nil
if stateJson then state = cjson.decode(stateJson) end
local ownEpoch = (state ~= nil) and (tostring(state.e) == ARGV[2])
local fenced = (not ownEpoch) or (state.s ~= 'running')
local function fencedReply()
  if state == nil then return {'fenced', -1} end
  return {'fenced', state.e}
end
