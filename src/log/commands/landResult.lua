--[[
  Lands a tool call's kept result, fenced: the staged `append` records, then harness.tool.result,
  then the call state 'done', all in one atomic write. A `replay: 'never'` call keeps `t` in its
  done state when nobody knows whether its tool finished (its attempt was cut, aborted or timed out
  while the tool ran, or its turn was aborted after its tool began): a rerun keeps its result (R19).

  Input:
    KEYS[1] calls: calls hash
    KEYS[2] log: session log stream
    KEYS[3] staged: staged records list of this call
    KEYS[4] openCalls: open calls index
    KEYS[5] conversation: the session's conversation projection (includes/conversation.lua)
    ARGV[1] toolCallId
    ARGV[2] epoch: caller's epoch
    ARGV[3] record: harness.tool.result record JSON
    ARGV[4] openMember: open calls member
    ARGV[5] publish: 'PUBLISH', or 'SPUBLISH' on a Cluster (the channel carries the shard's hash tag); '' for none (its only
            waiter is in the landing's process, which wakes it from the reply)
    ARGV[6] channel: events channel of the session's shard
    ARGV[7] messageKey: message key (formats.ts): PUBLISH "<key>\n<result record>" wakes waiters such as runTool
            (a lost message only delays them: they re-check)
    ARGV[8] toolEnd: 'unknown' the tool began and nobody knows whether it finished (sets t); 'asBefore' t
            stays as the state has it (a cancel at the begin: t from a park in the tool); '' the tool's own
            outcome, or an error from before it ran (clears t)

  Output:
    {'ok', resultEntryId} | {'fenced', currentEpoch}
]]
local callsKey, logKey, stagedKey, openCallsKey, convKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local toolCallId, epoch, record, openMember = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local publish, channel, messageKey, toolEnd = ARGV[5], ARGV[6], ARGV[7], ARGV[8]

--@include fence
--@include conversation
--@include compactLog
--@include land
local state, fenced, ownEpoch = loadFence(callsKey, toolCallId, epoch)
if ownEpoch and state.s == 'done' then return {'ok', state.id} end
if fenced then return fencedReply(state) end
if toolEnd == 'unknown' and state.r == 'never' then state.t = 1 elseif toolEnd ~= 'asBefore' then state.t = nil end
return {'ok', landCall(callsKey, logKey, convKey, stagedKey, openCallsKey, toolCallId, state, record, openMember, publish, channel, messageKey)}
