--[[
  A retention pass that trims nothing of a session (nothing due yet, or open work holds the cut) sets
  when the session is looked at again (includes/trimIndex.lua): only while its latest compaction is
  the one the pass read.

  Input:
    KEYS[1] inputs: inputs hash ("\0compaction": the read pointer, with the latest compaction's id)
    KEYS[2] trims: the shard's trim index (member sessionId, score: when it is due)
    ARGV[1] sessionId: the session id
    ARGV[2] latest: the entry id of the latest compaction the pass read ('' for none)
    ARGV[3] due: when to look again (ms; '' to leave the index)

  Output:
    'ok'
]]
--@include trimIndex
rescheduleTrim(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
return 'ok'
