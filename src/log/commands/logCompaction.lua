--[[
  Logs a harness.compaction record once per cut (R22): only when the session's latest compaction is
  still the one the caller built its plan on (`base`), so of two workers that compacted the same
  view (a turn and session.compact, a zombie and its successor) one record lands and the other is
  dropped as stale, and a summary that lands after a newer compaction cut further is dropped too.
  A crash before this write leaves no record; after it, exactly one. The record enters the
  conversation projection (includes/conversation.lua), and the session's read pointer moves past
  the cut: later reads of the model's view start right after the last cut turn's input (the
  projection's position is found from its tail, O(what follows the cut)), so a turn's read costs
  O(the view), not O(the session).

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash ("\0compaction" -> {id, from, at}: the latest compaction's entry id,
            and the projection entry (and its index, a hint) the view's reads start at)
    KEYS[3] conversation: the session's conversation projection (includes/conversation.lua)
    KEYS[4] usage: the session's spend totals (includes/usage.lua)
    KEYS[5] usageDay: the harness's spend of the day in the session's shard (keys.ts usageDayKey)
    KEYS[6] trims: the shard's trim index (member sessionId, score: when its oldest untrimmed compaction is due)
    ARGV[1] base: the entry id of the compaction the plan built on ('' for none)
    ARGV[2] throughEntry: the harness.input entry id of the last turn cut ('' when no turn is cut)
    ARGV[3] record: harness.compaction record JSON
    ARGV[4] counts: its summary calls' usage counts (includes/usage.lua; '' none): counted with the record, once
    ARGV[5] model: the model of its summary calls ('' unknown)
    ARGV[6] inputId: the turn it counts with ('' for session.compact's)
    ARGV[7] principal: who it counts for ('' nobody named)
    ARGV[8] trimAfter: the harness's compaction.trimAfter in ms ('' none: a later one keeps the latest's)
    ARGV[9] trimDue: when this compaction's span is due for trimming (ms; '' none)
    ARGV[10] sessionId: the session id (its member in the trim index)

  Output:
    {'ok', entryId} | {'stale', latestEntryId}
]]
local logKey, inputsKey, convKey, usageKey, usageDayKey, trimsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local base, throughEntry, record, counts, model, inputId, principal = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local trimAfter, trimDue, sessionId = ARGV[8], ARGV[9], ARGV[10]

--@include conversation
--@include usage
local raw = redis.call('HGET', inputsKey, '\0compaction')
local latest = raw and cjson.decode(raw)
local latestId = (latest and latest.id) or ''
if latestId ~= base then return {'stale', latestId} end

local id = redis.call('XADD', logKey, '*', 'r', record)
indexConversation(convKey, logKey, id)
local pointer = {id = id, from = '', at = 1}
if latest then
  pointer.from, pointer.at, pointer.trimAfter = latest.from, latest.at, latest.trimAfter
end
if trimAfter ~= '' then pointer.trimAfter = tonumber(trimAfter) end
if throughEntry ~= '' then
  local at = redis.call('LPOS', convKey, throughEntry, 'RANK', -1)
  if at then
    pointer.at = at + 1
    pointer.from = redis.call('LINDEX', convKey, at + 1)
  end
end
redis.call('HSET', inputsKey, '\0compaction', cjson.encode(pointer))
-- the oldest compaction not trimmed yet sets when the session is due (trimming moves it on)
if trimDue ~= '' and throughEntry ~= '' then redis.call('ZADD', trimsKey, 'NX', trimDue, sessionId) end
if counts ~= '' then countUsage(usageKey, usageDayKey, counts, inputId, principal, model) end
return {'ok', id}
