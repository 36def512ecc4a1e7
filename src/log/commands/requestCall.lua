--[[
  Logs a runTool request once per tool call id: the same id with the same tool and input is the same
  call (a caller's retry); with another tool or input it is refused, so an id never names two calls.
  Lists the session in the sessions index (retention starts from there) in the same write, so a
  runTool call pays no command of its own for it (issue 24).
  With ARGV[6] (a runTool call under a generated id, of a tool that may skip its begin: callMarks.ts),
  the call is begun here too, as beginCall begins a fresh one, and marked `q` (queued): its job's
  first delivery runs at epoch 1 without a begin of its own; any other begin of it counts as a cut.

  Input:
    KEYS[1] calls: calls hash ("<toolCallId>\0req" -> fingerprint of the call's tool and input; with ARGV[6]
            the call's state and "<toolCallId>\0names", as beginCall.lua writes them)
    KEYS[2] log: session log stream
    KEYS[3] sessions: sessions index (sorted set; NX: a listed session keeps its score, its last activity)
    KEYS[4] openCalls: open calls index (only with ARGV[6])
    ARGV[1] toolCallId
    ARGV[2] fingerprint
    ARGV[3] record: harness.tool.requested record JSON
    ARGV[4] now: now ms
    ARGV[5] sessionId: session id (member of the sessions index)
    ARGV[6] beginFor: '' or the harness name: begin the call (state, open calls index, harness.tool.started)
    ARGV[7] name: tool name (with ARGV[6])
    ARGV[8] openMember: open calls member (with ARGV[6])
    ARGV[9] version: '' or the harness version the call begins under (with ARGV[6]; docs/deploys.md)
    ARGV[10] compact: '1' to store harness.tool.started as its array (the deployment's record format 2: src/log/storedRecords.ts)

  Output:
    {'added', entryId} | {'exists'} | {'conflict'}
]]
local callsKey, logKey, sessionsKey, openCallsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local toolCallId, fingerprint, record, now, sessionId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local beginFor, name, openMember, version, compact = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]

--@include request
return requestOnce(callsKey, logKey, sessionsKey, openCallsKey, toolCallId, fingerprint, record, now, sessionId, beginFor, name, openMember, version, compact)
