--[[
  Registers a child call of a fan-out once (R23, R24): its place in its tree, checked against the
  tree's depth and its count of children in all, and counted, in one write. A rerun of the parent
  after a crash finds the child registered ('exists') and counts nothing again; a crash cannot count
  a child twice nor lose a count.

  Input:
    KEYS[1] tree: the session's tree hash (<childId> -> "<depth>|<rootId>|": its parent is in its id, <parentId>.<name>;
      "<rootId>\0n" -> children in all; a value that also ends with the parent's id, as older versions wrote, reads the same)
    ARGV[1] childId: the child's call id
    ARGV[2] parentId: the call that starts it
    ARGV[3] maxDepth: the deepest a child may be (1: a child of a root call)
    ARGV[4] maxCalls: the children a tree may have in all
    ARGV[5] timeoutMs: how long after its first child a tree may start more
    ARGV[6] now: now ms
    ARGV[7] baseDepth: the depth of the place the parent stands in when the hash does not know it (0: a root call);
      a call of a child agent's session stands in its agent's place (docs/fan-out.md "Trees across sessions")
    ARGV[8] baseRoot: the tree's root when the hash does not know the parent ('' for the parent itself)

  Output:
    {'exists', depth, rootId} | {'added', depth, rootId} | {'depth', depth, rootId} | {'calls', count, rootId}
    | {'timeout', ms since the tree's first child, rootId}
]]
local treeKey = KEYS[1]
local childId, parentId = ARGV[1], ARGV[2]
local maxDepth, maxCalls, timeoutMs, now = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local baseDepth, baseRoot = tonumber(ARGV[7]), ARGV[8]

local function placeOf(value)
  local depth, rest = string.match(value, '^(%d+)|(.*)$')
  local root = string.match(rest, '^([^|]*)|')
  return tonumber(depth), root
end

local own = redis.call('HGET', treeKey, childId)
if own then
  local depth, root = placeOf(own)
  return {'exists', depth, root}
end
local depth, root = baseDepth + 1, parentId
if baseRoot ~= '' then root = baseRoot end
local parent = redis.call('HGET', treeKey, parentId)
if parent then
  local parentDepth, parentRoot = placeOf(parent)
  depth, root = parentDepth + 1, parentRoot
end
if depth > maxDepth then return {'depth', depth, root} end
local countField = root .. '\0n'
local count = tonumber(redis.call('HGET', treeKey, countField) or '0')
if count >= maxCalls then return {'calls', count, root} end
local started = tonumber(redis.call('HGET', treeKey, root .. '\0t') or now)
if now - started > timeoutMs then return {'timeout', now - started, root} end
if count == 0 then redis.call('HSET', treeKey, root .. '\0t', now) end
-- the parent is not stored: the child's id names it (about 40 B a child of a 1,000-child fan-out)
redis.call('HSET', treeKey, childId, depth .. '|' .. root .. '|')
redis.call('HINCRBY', treeKey, countField, 1)
return {'added', depth, root}
