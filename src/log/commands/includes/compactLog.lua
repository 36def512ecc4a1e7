-- Gives back the unused bytes of a small session log. Redis allocates a stream's newest node at up to
-- 4 KiB (min(stream-node-max-bytes, 4096)) and shrinks a node only once it is full, so a session
-- that holds one parked call kept about 3.5 KB it never used (issue 15, bench 5a). While the log is
-- one node, DUMP + RESTORE rewrites it at its exact size: the same entries, ids, last id and groups
-- (a reader blocked in XREAD stays blocked and gets the next entry). A later XADD grows the node
-- again. It costs one copy of at most one node, at the points where a session goes idle. A log of
-- more entries than a node holds (stream-node-max-entries, 100 by default) is more than one node:
-- XLEN, O(1), tells so without XINFO STREAM, which builds its first and last entry for the reply
-- (a node raised above 100 entries by an operator is then left as it is: memory, not correctness).
-- compactLog(logKey)
local function compactLog(logKey)
  if redis.call('XLEN', logKey) > 100 then return end
  local info = redis.call('XINFO', 'STREAM', logKey)
  for i = 1, #info, 2 do
    if info[i] == 'radix-tree-keys' then
      if info[i + 1] ~= 1 then return end
      -- a TTL an operator may have set is kept (PTTL: -1 none, which RESTORE takes as 0)
      local ttl = redis.call('PTTL', logKey)
      if ttl < 0 then ttl = 0 end
      redis.call('RESTORE', logKey, ttl, redis.call('DUMP', logKey), 'REPLACE')
      return
    end
  end
end
