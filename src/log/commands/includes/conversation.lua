-- The session's conversation projection (read by readConversation): the log entry ids of its
-- harness.input, harness.model.response, harness.input.settled records and the harness.tool.result
-- records of its turns' calls (not of runTool calls: no model sees those), in log order, in a list headed by '^' (it holds every such record of the log) or by '^<id>' (it was
-- created on a log that already held entries: the ones before <id> are not in it yet; the reader
-- fills them in from the log once, with fillConversation). The log stays the source of truth: every
-- writer of such a record adds its id in the same script, so the two never disagree.
-- indexConversation(convKey, logKey, id) adds the entry just written to the log.
local function indexConversation(convKey, logKey, id)
  if redis.call('EXISTS', convKey) == 0 then
    if redis.call('XLEN', logKey) == 1 then
      redis.call('RPUSH', convKey, '^')
    else
      redis.call('RPUSH', convKey, '^' .. id)
    end
  end
  redis.call('RPUSH', convKey, id)
end
