--[[
  Makes a forked session (host.fork; docs/compaction.md, "Fork"): the copied conversation entries
  of the source's settled turns, each under its source stream id (so a copied compaction's
  `through`/`cleared` entry ids still name the copied inputs), the copied inputs settled in the
  inputs hash, then the harness.fork record under a new id. Only a session that does not exist yet
  is made: a fork never writes into a session that has a log or inputs. The conversation projection
  is left to be rebuilt from the log on its first read (includes/conversation.lua).

  Input:
    KEYS[1] log: the new session's log stream
    KEYS[2] inputs: the new session's inputs hash
    KEYS[3] sessions: the sessions index of its shard
    ARGV[1] entries: JSON array of [streamId, record JSON text], in stream order
    ARGV[2] inputs: JSON array of [inputId, input state JSON text]
    ARGV[3] record: harness.fork record JSON
    ARGV[4] sessionId: the new session's id (member of the sessions index)
    ARGV[5] now: now ms

  Output:
    {'forked', forkEntryId} | {'exists'}
]]
local logKey, inputsKey, sessionsKey = KEYS[1], KEYS[2], KEYS[3]
local entries, inputs, record, sessionId, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

if redis.call('EXISTS', logKey) == 1 or redis.call('EXISTS', inputsKey) == 1 then return {'exists'} end
for _, entry in ipairs(cjson.decode(entries)) do
  redis.call('XADD', logKey, entry[1], 'r', entry[2])
end
local count = 0
for _, input in ipairs(cjson.decode(inputs)) do
  redis.call('HSET', inputsKey, input[1], input[2])
  count = count + 1
end
redis.call('HSET', inputsKey, '\0seq', count)
local id = redis.call('XADD', logKey, '*', 'r', record)
redis.call('ZADD', sessionsKey, tonumber(now), sessionId)
return {'forked', id}
