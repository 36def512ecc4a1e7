import { StorageError } from '../errors/index.js'
import { assertCursor } from './streamIds.js'
import { waitForEntries } from './sharedReader.js'
import type { FollowOptions } from './readOptions.js'
import type { LogEntry, LogStream } from './stream.js'

type RawEntry = [string, string[]]

const FOLLOW_PAGE = 500

/**
 * Follows the log from a known id: reads on the log's connection, and while there is nothing new
 * waits on the connection's shared readers (sharedReader.ts), so a follower holds no connection of
 * its own. Never reads from `$`: after a reconnect it would skip what was written in the gap.
 */
export async function* followLog(stream: LogStream, options: FollowOptions = {}): AsyncGenerator<LogEntry> {
  assertCursor('follow({ after })', options.after)
  const { signal } = options
  let last = options.after ?? '0-0'
  let wait = false
  while (!signal?.aborted) {
    let page: RawEntry[]
    try {
      if (wait) await waitForEntries(stream.redis, [[stream.keys.log, last]], { timeoutMs: options.blockMs ?? 5000, signal })
      if (signal?.aborted) return
      const reply = (await stream.redis.xread('COUNT', FOLLOW_PAGE, 'STREAMS', stream.keys.log, last)) as Array<[string, RawEntry[]]> | null
      page = reply?.[0]?.[1] ?? []
    } catch (error) {
      if (signal?.aborted) return
      throw new StorageError('follow', stream.sessionId, error)
    }
    // a page not full took everything there was: wait for more before reading again
    wait = page.length < FOLLOW_PAGE
    for (const entry of page) {
      last = entry[0]
      const parsed = stream.parseEntry(entry)
      if (parsed && (!options.types || options.types.includes(parsed.record.type))) yield await stream.opened(parsed)
    }
  }
}
