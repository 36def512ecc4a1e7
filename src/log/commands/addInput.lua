--[[
  Logs a user input once per inputId (the same inputId twice runs once), and decides when its turn
  runs, by the harness's busy mode, against the session's open turns (one turn at a time):
    'queue'  the session is busy: the input waits in line (its turn is enqueued when the turns before it settle)
    'steer'  the session is busy: the input joins the running turn (its next model call sees it)
    'reject' the session is busy: refused, nothing written

  Input:
    KEYS[1] log: session log stream
    KEYS[2] inputs: inputs hash (inputId -> {text, entryId, status, harness, at, responses, parent?, context?, steered?, steerInto?, priority?}; "\0seq" -> counter)
    KEYS[3] sessions: sessions index (sorted set, score = last activity ms)
    KEYS[4] openTurns: open turns index (sorted set, member = the open turn member, score = start ms)
    KEYS[5] line: the session's open inputs in line (sorted set, score = arrival order)
    KEYS[6] conversation: the session's conversation projection (includes/conversation.lua)
    KEYS[7] usage: the session's spend totals (includes/usage.lua): a new session's gets 'x/v/' (its totals are whole)
    KEYS[8] openIndex: the turns index of the harness, status 'open' (keys.ts turnIndexKey: host.turns reads it)
    KEYS[9..] tagIndexes: the tag indexes of the harness, one per tag of the metadata (keys.ts turnTagIndexKey)
    ARGV[1] inputId
    ARGV[2] text
    ARGV[3] record: harness.input record JSON
    ARGV[4] now: now ms
    ARGV[5] sessionId: session id (member of the sessions index)
    ARGV[6] openMember: open turns member (formats.ts)
    ARGV[7] harness: harness name (the sweeper needs it to find the turn's queue)
    ARGV[8] parent: parent call JSON ('' for none): the agent tool call this input answers, woken when it settles
    ARGV[9] busy: busy mode: 'queue' | 'steer' | 'reject'
    ARGV[10] context: the input's context JSON ('' for none), kept as a string (verbatim: cjson would turn [] into {})
    ARGV[11] metadata: the input's metadata JSON ('' for none): string tags host.turns filters by
    ARGV[12] principal: who prompted ('' for nobody named)
    ARGV[13] priority: the prompt's BullMQ priority ('' for the harness's default): kept, so a turn enqueued
      later (from the line, by the sweeper, by a rerun) runs at the priority it was given
    ARGV[14] textCheck: with a codec, a fingerprint of the text ('' without): the text is sealed (a fresh
      ciphertext each time), so the same inputId's text is compared by this (kept as `tc`)

  Output:
    {'added', entryId, 'run' | 'queued' | 'steered', runningInputId or ''} | {'busy', runningInputId}
    | {'exists', entryId, status, 'first' | ''} | {'conflict'}
]]
local logKey, inputsKey, sessionsKey, openTurnsKey, lineKey, convKey, usageKey, openIndexKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local inputId, text, record, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local sessionId, openMember, harness, parent, busy, context = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local metadata, principal, priority, textCheck = ARGV[11], ARGV[12], ARGV[13], ARGV[14]

--@include conversation
local existing = redis.call('HGET', inputsKey, inputId)
if existing then
  local input = cjson.decode(existing)
  if (input.tc or '') ~= textCheck or (textCheck == '' and input.text ~= text) then return {'conflict'} end
  local first = ''
  if redis.call('ZRANK', lineKey, inputId) == 0 then first = 'first' end
  return {'exists', input.entryId, input.status, first}
end
local running = redis.call('ZRANGE', lineKey, 0, 0)[1]
if running and busy == 'reject' then return {'busy', running} end
local id = redis.call('XADD', logKey, '*', 'r', record)
indexConversation(convKey, logKey, id)
-- a session born with its totals: every model call of it is counted in them (session.usage reads no log)
if redis.call('XLEN', logKey) == 1 then redis.call('HSET', usageKey, 'x/v/', '1') end
local input = {text = text, entryId = id, status = 'open', harness = harness, at = tonumber(now)}
if parent ~= '' then input.parent = cjson.decode(parent) end
if context ~= '' then input.context = context end
if metadata ~= '' then input.metadata = cjson.decode(metadata) end
if principal ~= '' then input.principal = principal end
if priority ~= '' then input.priority = tonumber(priority) end
if textCheck ~= '' then input.tc = textCheck end
local disposition = 'run'
if running and busy == 'steer' then
  -- joins the running turn: listed on it, settled with it, never in line itself
  disposition = 'steered'
  input.steerInto = running
  local host = cjson.decode(redis.call('HGET', inputsKey, running))
  host.steered = host.steered or {}
  table.insert(host.steered, inputId)
  redis.call('HSET', inputsKey, running, cjson.encode(host))
else
  if running then disposition = 'queued' end
  redis.call('ZADD', lineKey, redis.call('HINCRBY', inputsKey, '\0seq', 1), inputId)
end
redis.call('HSET', inputsKey, inputId, cjson.encode(input))
redis.call('ZADD', sessionsKey, now, sessionId)
redis.call('ZADD', openTurnsKey, now, openMember)
redis.call('ZADD', openIndexKey, now, openMember)
for k = 9, #KEYS do redis.call('ZADD', KEYS[k], now, openMember) end
return {'added', id, disposition, running or ''}
