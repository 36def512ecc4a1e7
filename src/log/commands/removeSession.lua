--[[
  Retention: removes every key of a session that needs nothing any more, after its log was exported.
  Nothing is removed while the session has open work: an input not settled (a turn running or in
  line), or a call requested or begun and not landed (queued, running, parked on a sleep, an ask or an
  approval, or waiting for an agent child). In 'check' mode it only answers whether it could.
  The session leaves its shard's sessions index in the same write: a prompt that creates the
  session again right after it finds its keys gone and lists it again, and nothing unlists it then.

  Input:
    KEYS[1] log: session log stream
    KEYS[2] steps: steps hash
    KEYS[3] calls: calls hash
    KEYS[4] questions: questions hash
    KEYS[5] inputs: inputs hash
    KEYS[6] line: the session's open inputs in line
    KEYS[7] conversation: the session's conversation projection
    KEYS[8] live: the session's live stream
    KEYS[9] sessions: the shard's sessions index (sorted set)
    KEYS[10] usage: the session's spend totals (the harness's day totals stay)
    KEYS[11] tree: the session's fan-out trees
    KEYS[12] trims: the shard's trim index (the session leaves it)
    KEYS[13] budget: the session's budget counters (and its tree's, when it roots one)
    KEYS[14..] turnIndexes: ('remove') the turns indexes (keys.ts turnIndexKey) of the harnesses 'check' named, and
            the tool and tag indexes (turnToolIndexKey, turnTagIndexKey) it named: the session's turns
            leave them in the same write
    ARGV[1] mode: 'check' | 'remove'
    ARGV[2] exportedLastId: ('remove') the id of the log's last entry when it was exported ('' for an empty log)
    ARGV[3] sessionId: the session id (its member in the sessions index)

  Output:
    {'open', 'turn' | 'call'}      open work: nothing removed
    {'idle', lastEntryId or '', name...}  ('check') nothing open; the log's last entry, the harnesses of
                                   its inputs, and '\0tool\0<harness>\0<tool>' / '\0tag\0<harness>\0<key>\0<value>'
                                   for the tool and tag indexes its turns are in
    {'moved', lastEntryId}         ('remove') the log grew since it was exported: nothing removed
    {'removed'}
]]
local logKey, stepsKey, callsKey, questionsKey, inputsKey, lineKey, convKey, liveKey, sessionsKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local usageKey, treeKey, budgetKey = KEYS[10], KEYS[11], KEYS[13]
local mode, exported, sessionId = ARGV[1], ARGV[2], ARGV[3]

if redis.call('ZCARD', lineKey) > 0 then return {'open', 'turn'} end
local inputs = redis.call('HGETALL', inputsKey)
for i = 1, #inputs, 2 do
  -- '\0seq' is the line's counter, not an input
  if string.byte(inputs[i], 1) ~= 0 and cjson.decode(inputs[i + 1]).status ~= 'settled' then return {'open', 'turn'} end
end
-- a call is open from its request ("<id>\0req") or its begin ("<id>": the state) until it lands (state 'done')
local calls = redis.call('HGETALL', callsKey)
local states = {}
for i = 1, #calls, 2 do
  if not string.find(calls[i], '\0', 1, true) then states[calls[i]] = cjson.decode(calls[i + 1]).s end
end
for i = 1, #calls, 2 do
  local field = calls[i]
  local nul = string.find(field, '\0', 1, true)
  local id = field
  if nul then id = string.sub(field, 1, nul - 1) end
  -- 'again': reset by a rerun whose turn settled before the call ran again (nothing runs it now)
  if states[id] ~= 'done' and states[id] ~= 'again' then return {'open', 'call'} end
end
local last = redis.call('XREVRANGE', logKey, '+', '-', 'COUNT', 1)[1]
local lastId = ''
if last then lastId = last[1] end
if mode == 'check' then
  local reply, named = {'idle', lastId}, {}
  local function name(entry)
    if not named[entry] then
      named[entry] = true
      table.insert(reply, entry)
    end
  end
  for i = 1, #inputs, 2 do
    local input = string.byte(inputs[i], 1) ~= 0 and cjson.decode(inputs[i + 1])
    local harness = input and input.harness
    if harness and harness ~= '' then
      name(harness)
      -- the tool and tag indexes the input is in (a harness name never starts with NUL)
      for _, tool in ipairs(input.tools or {}) do name('\0tool\0' .. harness .. '\0' .. tool) end
      if type(input.metadata) == 'table' then
        for key, value in pairs(input.metadata) do name('\0tag\0' .. harness .. '\0' .. key .. '\0' .. tostring(value)) end
      end
    end
  end
  return reply
end
if lastId ~= exported then return {'moved', lastId} end
for i = 1, #inputs, 2 do
  if string.byte(inputs[i], 1) ~= 0 then
    for k = 14, #KEYS do redis.call('ZREM', KEYS[k], sessionId .. '|' .. inputs[i]) end
  end
end
redis.call('DEL', logKey, stepsKey, callsKey, questionsKey, inputsKey, lineKey, convKey, liveKey, usageKey, treeKey, budgetKey)
redis.call('ZREM', sessionsKey, sessionId)
redis.call('ZREM', KEYS[12], sessionId)
return {'removed'}
