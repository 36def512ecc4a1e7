--[[
  session.rerun: a failed or aborted turn runs again. Logs harness.turn.rerun once per rerunId and
  opens the input again (in the session's line, the open-turns index and the harness's 'open' turns
  index, out of its outcome's). Of the candidate calls (those of the turn's last model response),
  each that landed an error is reset to state 'again': its next begin runs it from the top (its kept
  steps stay kept, R5), and the rerun record names it so the fold drops its failed result. Its steps'
  retry states are cleared: a step whose tries were exhausted (or stopped) is tried afresh (R16), as
  an operator who reruns after fixing what failed expects. A call that landed a result stays done:
  its job begins as 'done' and never runs again (R19). So does a `replay: 'never'` call whose state
  has `t` (its tool began and nobody knows whether it finished: interrupted, aborted, timed out, or
  cancelled after its tool began; landResult.lua, parkCall.lua), unless the operator names it in
  `again`: the record lists those too.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash
    KEYS[3] calls: calls hash
    KEYS[4] openTurns: open turns index of the shard
    KEYS[5] line: the session's open inputs in line
    KEYS[6] conversation: the session's conversation projection (includes/conversation.lua)
    KEYS[7] openIndex: the turns index of the input's harness, status 'open' (keys.ts turnIndexKey)
    KEYS[8] failedIndex: the same, status 'failed'
    KEYS[9] abortedIndex: the same, status 'aborted'
    KEYS[10] steps: steps hash (its retry fields "\0retry\0<toolCallId>\0<step name>", keys.ts retryField)
    ARGV[1] inputId
    ARGV[2] rerunId: rerunId (the same rerunId again does nothing)
    ARGV[3] now: now ms
    ARGV[4] openMember: open turns member (formats.ts)
    ARGV[5] principal: who reran ('' for nobody named)
    ARGV[6] again: JSON array of candidate call ids to run again even if kept by `t` (the caller checked they are candidates)
    ARGV[7..] toolCallIds: the candidate tool call ids

  Output:
    {'rerun', entryId, firstInLineInputId} | {'exists'} (this rerunId ran already) | {'unknown'}
    | {'open'} (the turn has not settled) | {'completed'} (it completed: nothing to run again)
    | {'landed', toolCallId} / {'pending', toolCallId}: a call named in `again` landed a result (R19: it
      never runs again) / has no result yet (it runs or lands on its own); nothing written
]]
local logKey, inputsKey, callsKey, openTurnsKey, lineKey, convKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local openIndexKey, failedIndexKey, abortedIndexKey, stepsKey = KEYS[7], KEYS[8], KEYS[9], KEYS[10]

-- the retry states of a call's steps (a stored call id has no glob character: callIds.ts)
local function clearRetries(toolCallId)
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', stepsKey, cursor, 'MATCH', '\0retry\0' .. toolCallId .. '\0*', 'COUNT', 200)
    cursor = page[1]
    for i = 1, #page[2], 2 do redis.call('HDEL', stepsKey, page[2][i]) end
  until cursor == '0'
end
local inputId, rerunId, now, openMember, principal = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local againIds = cjson.decode(ARGV[6])

--@include conversation
local raw = redis.call('HGET', inputsKey, inputId)
if not raw then return {'unknown'} end
local input = cjson.decode(raw)
for _, id in ipairs(input.reruns or {}) do
  if id == rerunId then return {'exists'} end
end
if input.status ~= 'settled' then return {'open'} end
local outcome = input.outcome
if not outcome then
  -- settled before inputs kept their outcome: its settled record has it
  local settled = redis.call('XRANGE', logKey, input.settledId, input.settledId)[1]
  outcome = settled and cjson.decode(settled[2][2]).outcome
end
if outcome == 'completed' then return {'completed'} end

-- the calls named in `again`, checked before anything is written
local again = {}
for _, toolCallId in ipairs(againIds) do
  local stored = redis.call('HGET', callsKey, toolCallId .. '\0result')
  if not stored then return {'pending', toolCallId} end
  if not cjson.decode(stored).error then return {'landed', toolCallId} end
  again[toolCallId] = true
end

local reset = {}
for i = 7, #ARGV do
  local toolCallId = ARGV[i]
  local stored = redis.call('HMGET', callsKey, toolCallId, toolCallId .. '\0result')
  if stored[1] and stored[2] then
    local state = cjson.decode(stored[1])
    -- a 'never' call whose tool may have done its work keeps what it landed, unless named in again
    local kept = state.r == 'never' and state.t and not again[toolCallId]
    if state.s == 'done' and not kept and cjson.decode(stored[2]).error then
      state.s = 'again'
      state.id = nil
      state.t = nil
      redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
      redis.call('HDEL', callsKey, toolCallId .. '\0result')
      clearRetries(toolCallId)
      table.insert(reset, toolCallId)
    end
  end
end

local record = {type = 'harness.turn.rerun', inputId = inputId, rerunId = rerunId, at = tonumber(now)}
if #reset > 0 then record.calls = reset end
if #againIds > 0 then record.again = againIds end
if principal ~= '' then record.principal = principal end
local id = redis.call('XADD', logKey, '*', 'r', cjson.encode(record))
indexConversation(convKey, logKey, id)

input.status = 'open'
input.settledId = nil
input.outcome = nil
input.paused = nil
input.retried = nil
input.reruns = input.reruns or {}
table.insert(input.reruns, rerunId)
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
redis.call('ZREM', failedIndexKey, openMember)
redis.call('ZREM', abortedIndexKey, openMember)
redis.call('ZADD', openIndexKey, now, openMember)
redis.call('ZADD', openTurnsKey, now, openMember)
redis.call('ZADD', lineKey, redis.call('HINCRBY', inputsKey, '\0seq', 1), inputId)
return {'rerun', id, redis.call('ZRANGE', lineKey, 0, 0)[1] or ''}
