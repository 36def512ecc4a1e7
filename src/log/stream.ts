import { DurableHarnessError, MalformedEntryError, StorageError } from '../errors/index.js'
import { assertCursor, LAST_ID } from './streamIds.js'
import { runScript, scripts, type AnyScript, type ReplicaWait, type ScriptInput, type ScriptReply } from './commands/index.js'
import { publishCommand, type RedisClient } from './client.js'
import { namedIndexKeys, turnIndexKey, type IndexKeys, type SessionKeys, type TurnStatus } from './keys.js'
import { defaultShards } from './shards.js'
import { layoutOf, type ScriptKeys } from './sessionLayout.js'
import { appendLive, liveNeedsEscape, sealLive, type LiveEntry } from './live.js'
import { parseRecord, type HarnessRecordType, type LogRecord, type RecordOf } from './records.js'
import { encodeRecord, encodeStored, objectJson, parseCompactRecord, type RecordFormat } from './storedRecords.js'

import type { ReadOptions } from './readOptions.js'
import type { PayloadCodec } from '../codec/index.js'
import { isCodecError, maskRecord, type Sealed, needsOpening, openRecord, sealRecord } from './sealedRecords.js'

export { encodeRecord } from './storedRecords.js'
export type { FollowOptions, ReadOptions } from './readOptions.js'

/** One entry of the session log: its stream id and its record. */
export interface LogEntry<R extends LogRecord = LogRecord> {
  id: string
  record: R
}

/** Narrows a log entry on its record's type: `if (isRecord(entry, 'harness.tool.result')) entry.record.toolCallId`. */
export function isRecord<K extends HarnessRecordType>(entry: LogEntry, type: K): entry is LogEntry<RecordOf<K>> {
  return entry.record.type === type
}

/** How long a tool call attempt's own writes are retried when Redis refuses them (OOM) before its job fails. */
const DEFAULT_WRITE_RETRY_MS = 10_000

export interface SessionLogOptions {
  /** See DEFAULT_WRITE_RETRY_MS. */
  writeRetryMs?: number
  /** The deployment's shard count (default DH_SHARDS, else 1): the session's keys lie in its shard. */
  shards?: number
  /**
   * Step and result writes (saveStep, askQuestion, landResult, cancelCall) wait until this many
   * replicas have them (`WAIT`), so a failover cannot lose them; unacknowledged writes are retried
   * like a refused write (docs/deploy.md). Off by default.
   */
  waitReplicas?: ReplicaWait
  /**
   * Hears each result this process lands, with the message key and record its PUBLISH carries, once
   * Redis answered the landing: a waiter in the same process wakes without the message's trip through
   * the subscriber (harness/notifier.ts `deliver`). The PUBLISH still goes out for every other process,
   * except to none when `awaitedOnlyHere` says the only waiter is one this wakes (a runTool call under
   * an id this process made): then landResult sends no PUBLISH. Set by the local lane (LocalLane.landingOptions).
   */
  landed?: (messageKey: string, record: string) => void
  awaitedOnlyHere?: (messageKey: string) => boolean
  /** The deployment's record format (storedRecords.ts), filled in once the host has read it; 1 until then. */
  recordFormat?: { current: RecordFormat }
  /** Seals what a user or a model wrote before it is stored, and opens it on read (docs/encryption.md). */
  codec?: PayloadCodec
}

/** The writes that must survive a failover: a step's value (its side effect happened) and a call's result. */
const REPLICATED: ReadonlySet<string> = new Set(
  [scripts.saveStep, scripts.askQuestion, scripts.landResult, scripts.cancelCall].map((s) => s.name),
)

type RawEntry = [string, string[]]

/**
 * The stream of one session's log: reading, following and unfenced appends, and the one way every
 * part of the log runs a Redis operation (`command`, `script`). It is the context the parts of a
 * SessionLog share (sessionLog.ts): each part holds one stream and reaches Redis only through it.
 * Speaks only Redis.
 */
export class LogStream {
  readonly keys: SessionKeys
  /** The session's shard, and that shard's open-work indexes and wake-up channel. */
  readonly shard: number
  readonly index: IndexKeys
  /** PUBLISH, or SPUBLISH on a Cluster (the wake-up stays on the shard's master). */
  readonly publish: 'PUBLISH' | 'SPUBLISH'
  /** Part of every idempotency key: `${logId}:${toolCallId}:${name}`. */
  readonly logId: string
  /**
   * The session's keys and its shard's indexes by the names the scripts' declarations give them
   * (commands/*Scripts.ts), made once: a script's keys are these, with the ones of its own added
   * (`{ ...this.scriptKeys, openIndex }`). The staged list is not among them: a call's is its own.
   */
  readonly scriptKeys: ScriptKeys
  private readonly writeRetryMs: number
  private readonly waitReplicas: ReplicaWait | undefined
  readonly shards: number
  readonly landed: ((messageKey: string, record: string) => void) | undefined
  readonly awaitedOnlyHere: ((messageKey: string) => boolean) | undefined
  private readonly recordFormat: { current: RecordFormat } | undefined
  readonly codec: PayloadCodec | undefined

  constructor(
    readonly redis: RedisClient,
    readonly prefix: string,
    readonly sessionId: string,
    options: SessionLogOptions = {},
  ) {
    const shards = options.shards ?? defaultShards()
    const layout = layoutOf(prefix, sessionId, shards)
    this.keys = layout.keys
    this.shard = layout.shard
    this.index = layout.index
    this.scriptKeys = layout.scriptKeys
    this.shards = shards
    this.publish = publishCommand(redis)
    this.logId = sessionId
    this.writeRetryMs = options.writeRetryMs ?? DEFAULT_WRITE_RETRY_MS
    this.waitReplicas = options.waitReplicas
    this.landed = options.landed
    this.awaitedOnlyHere = options.awaitedOnlyHere
    this.recordFormat = options.recordFormat
    this.codec = options.codec
  }

  /**
   * The record as it is stored (sealedRecords.ts): its user and model content sealed by the codec. Without a codec the record itself (a NUL-led string escaped, so none reads as sealed).
   */
  async sealed<R extends LogRecord>(record: R): Promise<R> {
    if (!this.codec && !needsOpening(record)) return record
    // each sealed value is checked to be JSON as it is sealed; the record's other fields when it is encoded
    return sealRecord(this.codec, this.sessionId, record)
  }

  /** A record read from the log as it was written: its sealed content opened (CodecKeyMissingError for a key this process lacks). */
  async opened<E extends LogEntry>(entry: E, sealed: Sealed = 'throw'): Promise<E> {
    if (!needsOpening(entry.record)) return entry
    try {
      return { ...entry, record: await openRecord(this.codec, this.sessionId, entry.record) }
    } catch (error) {
      // 'mask': what this process cannot open reads as [encrypted] (a dashboard without the key)
      if (sealed === 'throw' || !isCodecError(error)) throw error
      return { ...entry, record: await maskRecord(this.sessionId, entry.record) }
    }
  }

  /** A stored record (a message's payload, a calls hash copy) as it was written: synchronous when nothing in it is sealed. */
  openedRecord<R extends LogRecord>(record: R): R | Promise<R> {
    return needsOpening(record) ? openRecord(this.codec, this.sessionId, record) : record
  }

  /** Whether this log writes the stored arrays of a parked call's records (storedRecords.ts). */
  get compact(): boolean {
    return this.recordFormat?.current === 2
  }

  /** A record as this log stores it (checked; its stored array when `compact` and it has one). */
  encode(record: LogRecord): string {
    return encodeStored(record, this.compact)
  }

  /**
   * Runs one Redis operation; what Redis throws becomes a StorageError with the cause attached. `retry`: the fenced
   * writes of an attempt, each idempotent when re-sent (a step saved twice returns the first value, a result landed
   * twice answers 'ok'), are retried with backoff for `writeRetryMs` first: a blip never turns a side effect into a tool error.
   */
  async command<T>(operation: string, run: () => Promise<T>, retry = false): Promise<T> {
    try {
      return await run()
    } catch (error) {
      // the loop, its clock and its backoff only once a try failed: the hot path is one await
      const deadline = Date.now() + (retry ? this.writeRetryMs : 0)
      for (let delay = 20, last = error; ; delay = Math.min(delay * 2, 1_000)) {
        if (last instanceof DurableHarnessError) throw last
        if (Date.now() + delay > deadline) throw new StorageError(operation, this.sessionId, last)
        await new Promise((resolve) => setTimeout(resolve, delay))
        try {
          return await run()
        } catch (again) {
          last = again
        }
      }
    }
  }

  /** One named Lua script through `command`. */
  script<S extends AnyScript>(script: S, input: ScriptInput<S>, retry = false): Promise<ScriptReply<S>> {
    const wait = this.waitReplicas && REPLICATED.has(script.name) ? this.waitReplicas : undefined
    return this.command(script.name, () => runScript(this.redis, script, input, wait), retry)
  }

  /**
   * This log, its commands sent on `client` (a connection BullMQ sends on, so a command of BullMQ's
   * sent next runs after ours: one round trip for both); itself when replicas are awaited (the WAIT
   * is pipelined behind the script, which need not be sent at once).
   */
  via(client: RedisClient | undefined): this {
    if (!client || this.waitReplicas) return this
    // a copy of the same shape as every log (not an object on top of this one): the hot paths' inline caches stay monomorphic
    return Object.assign(Object.create(Object.getPrototypeOf(this) as object) as this, this, { redis: client })
  }

  /** Adds a live entry (a model text delta, a tool's custom event): best effort, never the truth. */
  async appendLive(entry: LiveEntry): Promise<void> {
    const sealed = this.codec || liveNeedsEscape(entry) ? await sealLive(this.codec, this.sessionId, entry) : entry
    return this.command('appendLive', () => appendLive(this.redis, this.keys, sealed))
  }

  /** Appends records unfenced (recovery notes). */
  async append(records: LogRecord[]): Promise<string[]> {
    const sealed = await Promise.all(records.map((record) => this.sealed(record)))
    return this.script(scripts.appendRecords, { keys: this.scriptKeys, args: { records: sealed.map(encodeRecord) } })
  }

  async read(options: ReadOptions = {}): Promise<Array<LogEntry>> {
    for (const key of ['after', 'from', 'before'] as const) assertCursor(`read({ ${key} })`, options[key])
    if (options.limit !== undefined && options.limit <= 0) return []
    // nothing comes after the largest id, and Redis refuses an exclusive range from it
    if (options.after === LAST_ID) return []
    const start = options.from ?? (options.after ? `(${options.after}` : '-')
    const end = options.before ? `(${options.before}` : '+'
    const out: LogEntry[] = []
    const page = options.limit && !options.types ? options.limit : 1000
    let from = start
    for (;;) {
      const raw = await this.command('read', () => this.redis.xrange(this.keys.log, from, end, 'COUNT', page))
      for (const entry of raw) {
        const parsed = this.parseEntry(entry)
        if (parsed && (!options.types || options.types.includes(parsed.record.type))) out.push(await this.opened(parsed))
        if (options.limit && out.length >= options.limit) return out
      }
      if (raw.length < page) return out
      from = `(${raw[raw.length - 1]![0]}`
    }
  }

  /**
   * The whole log as JSON Lines, one `{"id":"<stream id>","record":<record>}` a line in log order (records
   * unchecked, a stored array as its object: storedRecords.ts), with the id of its last entry ('' for none).
   */
  async exportJsonl(): Promise<{ jsonl: string; lastId: string }> {
    const lines: string[] = []
    let from = '-'
    let lastId = ''
    for (;;) {
      const raw = await this.command('export', () => this.redis.xrange(this.keys.log, from, '+', 'COUNT', 1000))
      for (const [id, fields] of raw) {
        lines.push(`{"id":${JSON.stringify(id)},"record":${objectJson(fields[1])}}\n`)
        lastId = id
      }
      if (raw.length < 1000) return { jsonl: lines.join(''), lastId }
      from = `(${lastId}`
    }
  }

  /**
   * Retention (removeSession.lua): 'check' answers whether the session has open work and names its
   * last log entry; 'remove' deletes every key of the session and its entry in the sessions index, in
   * one write, unless it has open work or its log grew past `exportedLastId`. `names`: what 'check'
   * named (harnesses, and NUL-led tool and tag index names): every index of them is cleaned.
   */
  removeSession(mode: 'check' | 'remove', exportedLastId = '', names: readonly string[] = []) {
    const indexes = namedIndexKeys(this.prefix, this.shard, this.shards, names)
    return this.script(scripts.removeSession, {
      keys: { ...this.scriptKeys, turnIndexes: indexes },
      args: { mode, exportedLastId, sessionId: this.sessionId },
    })
  }

  /** The turns index of a harness in this session's shard (keys.ts turnIndexKey). */
  turnIndex(harness: string, status: TurnStatus): string {
    return turnIndexKey(this.prefix, this.shard, this.shards, harness, status)
  }

  /** One entry by its stream id. */
  async readEntry(id: string): Promise<LogEntry | null> {
    const [raw] = await this.command('read', () => this.redis.xrange(this.keys.log, id, id))
    const parsed = raw ? this.parseEntry(raw) : null
    return parsed && this.opened(parsed)
  }

  /** Parses one raw stream entry (null for a newer version's record type, which readers skip). */
  parseEntry([id, fields]: RawEntry): LogEntry | null {
    const rawJson = fields[1]
    let record: LogRecord | 'skip'
    try {
      if (fields[0] !== 'r' || rawJson === undefined) throw new Error('no "r" field')
      const stored: unknown = JSON.parse(rawJson)
      record = Array.isArray(stored) ? parseCompactRecord(stored) : parseRecord(stored, 'read')
    } catch (error) {
      void this.redis.hset(this.index.corrupt, this.sessionId, id).catch(() => {})
      throw new MalformedEntryError(this.sessionId, id, error instanceof Error ? error.message : String(error))
    }
    return record === 'skip' ? null : { id, record }
  }
}
