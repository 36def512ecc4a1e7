import type { StreamChunk } from '@tanstack/ai'
import { StorageError, UnknownInputError } from '../errors/index.js'
import { compareIds, waitForEntries, type SessionLog } from '../log/index.js'
import { openLive, parseLive } from '../log/live.js'
import { cursorBefore, decodeCursor, encodeCursor, type Cursor } from './cursor.js'
import { EventMapper } from './toEvents.js'

/** Options of `session.events()`: where to resume, and when to stop. */
export interface EventsOptions {
  /** A cursor from an earlier event: resume right after it (exactly once, in order). Default: the beginning. */
  from?: string
  /**
   * Start at the record of this input (a turn's RUN_STARTED), not at the session's beginning: a
   * turn's events cost what the turn holds, however long the session is. Ignored with `from`.
   */
  fromInput?: string
  signal?: AbortSignal
  /** false: stop at the end of what is there now. Default true: wait for more. */
  follow?: boolean
  /** How long one blocking read waits before it checks the signal again. */
  blockMs?: number
  /**
   * What a value this process cannot open does (docs/encryption.md: no codec, or a key it lacks):
   * 'throw' (default) fails with the codec's error, naming the key; 'mask' reads it as `[encrypted]`.
   */
  sealed?: 'throw' | 'mask'
}

/** One live event of a session: an AG-UI chunk (or a harness event) and the cursor to resume after it. */
export interface SessionEvent {
  cursor: string
  event: StreamChunk
}

type RawEntry = [string, string[]]

const PAGE = 500

/**
 * A session's events, from its log and its live stream, merged by stream id (one XREAD on both keys,
 * which share the session's hash tag). Each event carries the cursor that resumes right after it.
 * Reads on the log's own connection from the last positions seen, never from `$`; while there is
 * nothing new it waits on the connection's shared readers (log/sharedReader.ts), so a follower holds
 * no connection of its own.
 */
export async function* followEvents(log: SessionLog, options: EventsOptions = {}): AsyncGenerator<SessionEvent> {
  let at: Cursor =
    options.from === undefined && options.fromInput !== undefined ? await inputStart(log, options.fromInput) : decodeCursor(options.from)
  const follow = options.follow ?? true
  // from an input: text deltas of a turn whose input is not in this read are an earlier turn's
  const inputs = options.from === undefined && options.fromInput !== undefined ? new Set<string>() : undefined
  const mapper = new EventMapper(log.sessionId, { message: at.message, emitted: at.emitted })
  const { signal } = options
  // a read that filled no page took everything there was: wait for more before reading again
  let wait = false
  while (!signal?.aborted) {
    let reply: Array<[string, RawEntry[]]> | null
    try {
      if (wait)
        await waitForEntries(
          log.stream.redis,
          [
            [log.stream.keys.log, at.log],
            [log.stream.keys.live, at.live],
          ],
          { timeoutMs: options.blockMs ?? 5_000, signal },
        )
      if (signal?.aborted) return
      reply = await log.stream.redis.xread('COUNT', PAGE, 'STREAMS', log.stream.keys.log, log.stream.keys.live, at.log, at.live)
    } catch (error) {
      if (signal?.aborted) return
      throw new StorageError('events', log.sessionId, error)
    }
    const entries = mergeByID(reply, log.stream.keys.log, PAGE)
    if (entries.length === 0 && !follow) return
    wait = follow && !(reply ?? []).some(([, page]) => page.length >= PAGE)
    for (const { stream, id, fields } of entries) {
      const events =
        stream === 'log'
          ? await logEvents(log, mapper, id, fields, options.sealed)
          : await liveEvents(log, mapper, fields, inputs, options.sealed)
      if (inputs) for (const e of events) if (e.type === 'RUN_STARTED') inputs.add(e.runId)
      const before = at
      const after: Cursor = { ...before, [stream]: id, message: mapper.state.message, emitted: mapper.state.emitted, skip: 0 }
      for (let i = before.skip; i < events.length; i++) {
        // an event that is not its entry's last resumes before the entry, skipping what came out of it
        const cursor = i < events.length - 1 ? { ...before, skip: i + 1 } : after
        yield { cursor: encodeCursor(cursor), event: events[i]! }
      }
      at = after
    }
  }
}

async function inputStart(log: SessionLog, inputId: string): Promise<Cursor> {
  const input = await log.inputs.getInput(inputId)
  if (!input) throw new UnknownInputError(inputId)
  return cursorBefore(input.entryId)
}

async function logEvents(
  log: SessionLog,
  mapper: EventMapper,
  id: string,
  fields: string[],
  sealed?: 'throw' | 'mask',
): Promise<StreamChunk[]> {
  const entry = log.stream.parseEntry([id, fields])
  return entry ? mapper.fromLog((await log.stream.opened(entry, sealed)).record, id) : []
}

async function liveEvents(
  log: SessionLog,
  mapper: EventMapper,
  fields: string[],
  inputs: Set<string> | undefined,
  sealed?: 'throw' | 'mask',
): Promise<StreamChunk[]> {
  const entry = parseLive(fields)
  if (!entry || (inputs && entry.k === 'delta' && !inputs.has(entry.inputId))) return []
  return mapper.fromLive(await openLive(log.stream.codec, log.sessionId, entry, sealed))
}

/**
 * The entries of both streams in one order. Ids of two streams say nothing about order within one
 * millisecond (each stream counts its own sequence), so a two-way merge by millisecond keeps each
 * stream's order, and within one millisecond puts the live entries before a model response or a tool
 * result (its deltas and custom events came first) and after anything else logged (an input, a step).
 * A stream that filled its page may have more entries before the other stream's later ones, so only
 * entries up to the last id of a full page are taken; the rest are read again next time.
 */
function mergeByID(reply: Array<[string, RawEntry[]]> | null, logKey: string, page: number) {
  type Item = { stream: 'log' | 'live'; id: string; fields: string[] }
  const log: Item[] = []
  const live: Item[] = []
  let cap: string | undefined
  for (const [key, entries] of reply ?? []) {
    const into = key === logKey ? log : live
    for (const [id, fields] of entries) into.push({ stream: key === logKey ? 'log' : 'live', id, fields })
    const last = entries.at(-1)?.[0]
    if (entries.length >= page && last && (cap === undefined || compareIds(last, cap) < 0)) cap = last
  }
  const ms = (id: string) => BigInt(id.split('-')[0]!)
  const closesLive = (item: Item) => /^\{"type":"harness\.(model\.response|tool\.result)"/.test(item.fields[1] ?? '')
  const out: Item[] = []
  for (let i = 0, j = 0; i < log.length || j < live.length;) {
    const a = log[i]
    const b = live[j]
    const liveFirst = !a || (b !== undefined && (ms(b.id) < ms(a.id) || (ms(b.id) === ms(a.id) && closesLive(a))))
    if (liveFirst) out.push(live[j++]!)
    else out.push(log[i++]!)
  }
  return cap === undefined ? out : out.filter((e) => compareIds(e.id, cap) <= 0)
}
