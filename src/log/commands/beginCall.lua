--[[
  Starts an attempt of a tool call and classifies how it was picked up. Every attempt gets a new
  fencing epoch; later writes of older attempts are refused.

  Input:
    KEYS[1] calls: calls hash (toolCallId -> {s = status (running | parked | done | again), e = epoch, a = attempt, r = replay, i = inputId};
            "<toolCallId>\0names" -> [name, harness, version] ('' for none), written once with the state;
            "<toolCallId>\0req" -> the fingerprint of the logged call). Each value is under Redis's 64 B
            hash-max-listpack-value for usual names, so a session's small calls hash is a listpack (issue 29,
            row 5f). A state written before the names had their own field holds n, h and v itself: it is read as is.
    KEYS[2] log: session log stream
    KEYS[3] staged: staged records list of this call
    KEYS[4] openCalls: open calls index (sorted set)
    KEYS[5] inputs: inputs hash: the turn's input state is returned with the begin (the attempt needs its status and context)
    ARGV[1] toolCallId
    ARGV[2] name: tool name
    ARGV[3] replay: replay: 'safe' | 'never'
    ARGV[4] now: now ms
    ARGV[5] openMember: open calls member
    ARGV[6] harness: harness name ('' for none), kept in the state so the sweeper can enqueue the call again
    ARGV[7] inputId: the turn's inputId ('' for a runTool call), kept in the state likewise (the sweeper finds the input in the log)
    ARGV[8] fingerprint: the fingerprint of the call the job names (tool, input, turn): the attempt begins only if the
            log's request of the call ("<toolCallId>\0req", written with the logged call) has it; ''
            begins unchecked (the caller took the call from the log itself)
    ARGV[9] version: the harness version of this worker ('' for none): a fresh call keeps it as the version it
            began under (its names field), which every later attempt gets back (docs/deploys.md)
    ARGV[10] compact: '1' to store harness.tool.started as its array (the deployment's record format 2: src/log/storedRecords.ts)

  Output:
    {'unverified'} (nothing written) the call is not logged, or logged with another fingerprint
    {kind, epoch, attempt, input, version} with input the turn's input state JSON ('' for a runTool
    call or none; not sent with 'done'), version the one the call began under ('' for none) and kind:
      'done'   the call has its kept result: do not run it
      'fresh'  first attempt
      'resume' a parked call woke up (sleep or answer): planned, not a crash
      'rerun'  the previous attempt was cut and the call is replay 'safe', or session.rerun reset the
               call's failed result (state 'again'): run it again
      'cut'    the previous attempt was cut and the call is replay 'never': land a tool error
]]
local callsKey, logKey, stagedKey, openCallsKey, inputsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local toolCallId, name, replay, now, openMember, harness, inputId, fingerprint, version, compact =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]

-- the call's state and the request its logged call wrote (model response or runTool), in one read
local stored = redis.call('HMGET', callsKey, toolCallId, toolCallId .. '\0req', toolCallId .. '\0names')
local state = stored[1] and cjson.decode(stored[1])
if state and state.s == 'done' then return {'done', state.e, state.a} end
-- the log is the truth: a job whose data was edited (or that nobody logged) begins nothing
if fingerprint ~= '' and stored[2] ~= fingerprint then return {'unverified'} end
local kind
-- the name and version the call began under: its names field, or an older state's own n and v
local callName, began = name, version
if not state then
  state = {s = 'running', e = 1, a = 1, r = replay}
  if inputId ~= '' then state.i = inputId end
  kind = 'fresh'
else
  local names = stored[3] and cjson.decode(stored[3])
  if names then callName, began = names[1], names[3] else callName, began = state.n, state.v or '' end
  -- begun with its runTool request (requestCall.lua) for a first delivery that skips its begin:
  -- any begin of it (a re-delivery, or a first one that could not skip) may follow one that ran
  state.q = nil
  if state.s == 'parked' then
    kind = 'resume'
  elseif state.s == 'again' then
    -- session.rerun reset a call that had landed an error (rerunTurn.lua): a new attempt from the top
    state.a = state.a + 1
    kind = 'rerun'
  else
    -- 'running' seen by a new attempt: the previous one was cut by a crash
    state.a = state.a + 1
    if state.r == 'safe' then
      kind = 'rerun'
    else
      kind = 'cut'
    end
  end
  -- The staged records of a cut 'safe' attempt never happened: it runs again from the top. A resumed
  -- call keeps them (its appends are staged by position, so running from the top adds none twice),
  -- and a cut 'never' call lands them with its error.
  if kind == 'rerun' then redis.call('DEL', stagedKey) end
  state.s = 'running'
  state.e = state.e + 1
end
redis.call('ZADD', openCallsKey, now, openMember)
if kind == 'fresh' then
  -- in the same HSET: a fresh begin sends no more commands than before its names had their own field
  redis.call('HSET', callsKey, toolCallId, cjson.encode(state), toolCallId .. '\0names', cjson.encode({name, harness, version}))
else
  redis.call('HSET', callsKey, toolCallId, cjson.encode(state))
end
if kind ~= 'resume' then
  local startedVersion = began ~= '' and began or nil
  local started
  if compact == '1' then
    started = cjson.encode({'b', toolCallId, callName, state.a, state.r, kind, startedVersion})
  else
    started = cjson.encode({
      type = 'harness.tool.started', toolCallId = toolCallId, name = callName,
      attempt = state.a, replay = state.r, reason = kind, version = startedVersion})
  end
  redis.call('XADD', logKey, '*', 'r', started)
end
local input = ''
if inputId ~= '' then input = redis.call('HGET', inputsKey, inputId) or '' end
return {kind, state.e, state.a, input, began}
