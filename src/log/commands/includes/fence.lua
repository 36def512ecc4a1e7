-- Loads the state of call ARGV[1] from the calls hash (KEYS[1]) and checks the caller's epoch.
-- Defines: state (table or nil), fenced (true when ARGV[2] is not the current epoch of a running call).
local stateJson = redis.call('HGET', KEYS[1], ARGV[1])
local state = nil
if stateJson then state = cjson.decode(stateJson) end
local fenced = (state == nil) or (state.s ~= 'running') or (tostring(state.e) ~= ARGV[2])
local function fencedReply()
  if state == nil then return {'fenced', -1} end
  return {'fenced', state.e}
end
