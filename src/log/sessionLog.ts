import type { Redis } from 'ioredis'
import { DurableHarnessError, FencedError, InvalidCursorError, InvalidRecordError, MalformedEntryError, StorageError } from '../errors.js'
import { baseCallId, callFingerprint, scopedCallId } from './callIds.js'
import { withLogCommands, type LogCommands } from './commands/index.js'
import { assertInputId, assertQuestionId, indexKeys, requestField, sessionKeys, stepField, type SessionKeys } from './keys.js'
import { parseRecord, type HarnessRecord, type LogRecord, type RecordOf, type ToolCallRecord, type ToolErrorPayload } from './records.js'

export interface LogEntry<R extends LogRecord = LogRecord> {
  id: string
  record: R
}

export interface ReadOptions {
  /** Exclusive: entries after this stream id. */
  after?: string
  /** Inclusive: entries from this stream id on (instead of `after`). */
  from?: string
  /** Exclusive: entries before this stream id. */
  before?: string
  /** Only these record types. */
  types?: readonly string[]
  limit?: number
}

export interface FollowOptions {
  after?: string
  types?: readonly string[]
  signal?: AbortSignal
  /** How long one XREAD BLOCK waits before it checks the signal again. */
  blockMs?: number
}

export type BeginKind = 'done' | 'fresh' | 'resume' | 'rerun' | 'cut'
export interface BeginResult {
  kind: BeginKind
  epoch: number
  attempt: number
}

export interface CallState {
  status: 'running' | 'parked' | 'done'
  epoch: number
  attempt: number
  replay: 'safe' | 'never'
  name: string
  owner?: CallOwner
  result?: RecordOf<'harness.tool.result'>
}

/** A step.ask question as logged and kept in the questions hash. */
export type Question = Omit<RecordOf<'harness.tool.ask'>, 'type'>

/** The agent tool call a child session's input answers. */
export interface ParentCall {
  harness: string
  sessionId: string
  toolCallId: string
}

export interface InputState {
  text: string
  entryId: string
  status: 'open' | 'settled'
  harness: string
  at: number
  settledId?: string
  responses?: number
  parent?: ParentCall
}

/** Where a call belongs: its harness and, for a call of a turn, the turn's inputId (none for runTool). */
export interface CallOwner {
  harness: string
  inputId?: string
}

export type StoredValue = { found: true; value: unknown }
export type StepLookup = { found: false } | StoredValue

/** What a fenced write names: the call and the attempt's epoch. */
export interface Fence {
  toolCallId: string
  epoch: number
}

/** Stored form of a step value: '' means the step returned nothing (JSON has no undefined). */
export const NO_VALUE = ''

/** How long a tool call attempt's own writes are retried when Redis refuses them (OOM) before its job fails. */
export const DEFAULT_WRITE_RETRY_MS = 10_000

export interface SessionLogOptions {
  /** See DEFAULT_WRITE_RETRY_MS. */
  writeRetryMs?: number
}

/** A stream id as XRANGE takes it: `<ms>` or `<ms>-<seq>`. */
const STREAM_ID = /^\d{1,20}(-\d{1,20})?$/

/** A tool call as the model gave it, before it gets its stored id. */
export type ModelToolCall = Omit<ToolCallRecord, 'modelToolCallId'>

/**
 * The session log of one session: a Redis Stream plus the hashes that index it. Speaks only Redis.
 * Every multi-key write is one named Lua script (src/log/commands).
 */
export class SessionLog {
  readonly keys: SessionKeys
  readonly redis: Redis & LogCommands
  /** Part of every idempotency key: `${logId}:${toolCallId}:${name}`. */
  readonly logId: string
  private readonly writeRetryMs: number

  constructor(
    redis: Redis,
    readonly prefix: string,
    readonly sessionId: string,
    options: SessionLogOptions = {},
  ) {
    this.keys = sessionKeys(prefix, sessionId)
    this.redis = withLogCommands(redis)
    this.logId = sessionId
    this.writeRetryMs = options.writeRetryMs ?? DEFAULT_WRITE_RETRY_MS
  }

  /**
   * Runs one Redis operation; what Redis throws becomes a StorageError with the cause attached.
   * `retry`: the fenced writes of a tool call attempt, each idempotent when re-sent (a step saved
   * twice returns the first value, a result landed twice answers 'ok'), are retried with backoff for
   * `writeRetryMs` first, so an OOM or a blip never turns a side effect that ran into a tool error.
   */
  private async command<T>(operation: string, run: () => Promise<T>, retry = false): Promise<T> {
    const deadline = Date.now() + (retry ? this.writeRetryMs : 0)
    for (let delay = 20; ; delay = Math.min(delay * 2, 1_000)) {
      try {
        return await run()
      } catch (error) {
        if (error instanceof DurableHarnessError) throw error
        if (Date.now() + delay > deadline) throw new StorageError(operation, this.sessionId, error)
        await new Promise((resolve) => setTimeout(resolve, delay))
      }
    }
  }

  /** Appends records unfenced (recovery notes). */
  async append(records: LogRecord[]): Promise<string[]> {
    const encoded = records.map(encodeRecord)
    return this.command('append', () => this.redis.appendRecords(this.keys.log, ...encoded))
  }

  async read(options: ReadOptions = {}): Promise<Array<LogEntry>> {
    for (const key of ['after', 'from', 'before'] as const) {
      const value = options[key]
      if (value !== undefined && (typeof value !== 'string' || !STREAM_ID.test(value))) throw new InvalidCursorError(`read({ ${key} })`, value)
    }
    if (options.limit !== undefined && options.limit <= 0) return []
    const start = options.from ?? (options.after ? `(${options.after}` : '-')
    const end = options.before ? `(${options.before}` : '+'
    const out: LogEntry[] = []
    const page = options.limit && !options.types ? options.limit : 1000
    let from = start
    for (;;) {
      const raw = (await this.command('read', () => this.redis.xrange(this.keys.log, from, end, 'COUNT', page))) as RawEntry[]
      for (const entry of raw) {
        const parsed = this.parseEntry(entry)
        if (parsed && (!options.types || options.types.includes(parsed.record.type))) out.push(parsed)
        if (options.limit && out.length >= options.limit) return out
      }
      if (raw.length < page) return out
      from = `(${raw[raw.length - 1]![0]}`
    }
  }

  /** One entry by its stream id. */
  async readEntry(id: string): Promise<LogEntry | null> {
    const [raw] = (await this.command('read', () => this.redis.xrange(this.keys.log, id, id))) as RawEntry[]
    return raw ? this.parseEntry(raw) : null
  }

  /**
   * Follows the log from a known id with XREAD BLOCK on its own connection. Never reads from `$`:
   * after a reconnect ioredis would re-send it and skip what was written in the gap.
   */
  async *follow(options: FollowOptions = {}): AsyncGenerator<LogEntry> {
    if (options.after !== undefined && (typeof options.after !== 'string' || !STREAM_ID.test(options.after))) throw new InvalidCursorError('follow({ after })', options.after)
    let last = options.after ?? '0-0'
    const conn = this.redis.duplicate()
    const onAbort = () => conn.disconnect()
    options.signal?.addEventListener('abort', onAbort, { once: true })
    try {
      while (!options.signal?.aborted) {
        let reply: Array<[string, RawEntry[]]> | null
        try {
          reply = (await conn.xread('COUNT', 500, 'BLOCK', options.blockMs ?? 5000, 'STREAMS', this.keys.log, last)) as
            | Array<[string, RawEntry[]]>
            | null
        } catch (error) {
          if (options.signal?.aborted) return
          throw new StorageError('follow', this.sessionId, error)
        }
        for (const entry of reply?.[0]?.[1] ?? []) {
          last = entry[0]
          const parsed = this.parseEntry(entry)
          if (parsed && (!options.types || options.types.includes(parsed.record.type))) yield parsed
        }
      }
    } finally {
      options.signal?.removeEventListener('abort', onAbort)
      conn.disconnect()
    }
  }

  /** O(1) lookup of a stored step (HGET on the steps hash; the stream is not read). */
  async getStep(toolCallId: string, name: string): Promise<StepLookup> {
    const stored = await this.command('getStep', () => this.redis.hget(this.keys.steps, stepField(toolCallId, name)))
    return stored === null ? { found: false } : { found: true, value: decodeValue(stored) }
  }

  /**
   * The input of a call, from the record that asked for it (the turn's model response, or runTool's
   * request). Reads the log: for the sweeper's rare repairs, not for a hot path.
   */
  async findCallInput(toolCallId: string, inputId?: string): Promise<unknown> {
    const input = inputId ? await this.getInput(inputId) : null
    for (const { record } of await this.read(input ? { from: input.entryId } : {})) {
      if (record.type === 'harness.tool.requested' && (record as RecordOf<'harness.tool.requested'>).toolCallId === toolCallId) return (record as RecordOf<'harness.tool.requested'>).input
      if (record.type === 'harness.model.response') {
        const call = (record as RecordOf<'harness.model.response'>).toolCalls.find((c) => c.toolCallId === toolCallId)
        if (call) return call.input
      }
    }
    return undefined
  }

  async getCall(toolCallId: string): Promise<CallState | null> {
    const [state, result] = await this.command('getCall', () => this.redis.hmget(this.keys.calls, toolCallId, `${toolCallId}\0result`))
    if (!state) return null
    const s = JSON.parse(state) as { s: CallState['status']; e: number; a: number; r: CallState['replay']; n: string; h?: string; i?: string }
    return {
      status: s.s,
      epoch: s.e,
      attempt: s.a,
      replay: s.r,
      name: s.n,
      ...(s.h ? { owner: { harness: s.h, ...(s.i ? { inputId: s.i } : {}) } } : {}),
      ...(result ? { result: JSON.parse(result) as RecordOf<'harness.tool.result'> } : {}),
    }
  }

  // ---- inputs (turns) ----

  async addInput(inputId: string, text: string, harness = '', parent?: ParentCall): Promise<{ status: 'added' | 'exists' | 'conflict'; entryId?: string }> {
    assertInputId(inputId)
    const idx = indexKeys(this.prefix)
    const record: HarnessRecord = { type: 'harness.input', inputId, text, at: Date.now() }
    const encoded = encodeRecord(record)
    const [status, entryId] = await this.command('addInput', () =>
      this.redis.addInput(
        this.keys.log, this.keys.inputs, idx.sessions, idx.openTurns,
        inputId, text, encoded, Date.now(), this.sessionId, harness, parent ? JSON.stringify(parent) : '',
      ),
    )
    return { status: status as 'added' | 'exists' | 'conflict', ...(entryId ? { entryId: String(entryId) } : {}) }
  }

  async getInput(inputId: string): Promise<InputState | null> {
    const raw = await this.command('getInput', () => this.redis.hget(this.keys.inputs, inputId))
    return raw ? JSON.parse(raw) : null
  }

  /** The settled record of an input, once it has settled. */
  async getSettled(inputId: string): Promise<RecordOf<'harness.input.settled'> | null> {
    const input = await this.getInput(inputId)
    if (input?.status !== 'settled' || !input.settledId) return null
    return ((await this.readEntry(input.settledId))?.record as RecordOf<'harness.input.settled'> | undefined) ?? null
  }

  /** Settles the input once: 'settled' the first time, 'already' after, 'unknown' for no such input. */
  async settleInput(record: RecordOf<'harness.input.settled'>): Promise<'settled' | 'already' | 'unknown'> {
    const encoded = encodeRecord(record)
    const [status] = await this.command('settleInput', () =>
      this.redis.settleInput(
        this.keys.log, this.keys.inputs, indexKeys(this.prefix).openTurns,
        record.inputId, encoded, `${this.sessionId}|${record.inputId}`, indexKeys(this.prefix).events,
      ),
    )
    return status as 'settled' | 'already' | 'unknown'
  }

  /**
   * Logs a model response if the turn still has `expected` responses, with a stored id for each tool
   * call (callIds.ts): the model's id where it is safe and unused in the session, else one scoped by
   * this response. Returns the logged calls, or null when another run of the turn logged first.
   */
  async logModelResponse(inputId: string, response: { text?: string; toolCalls: ModelToolCall[] }, expected: number): Promise<ToolCallRecord[] | null> {
    // another writer can take an id between our look-up and the write only by a racing runTool: pick again
    for (let tries = 0; tries < 3; tries++) {
      const toolCalls = await this.storedCallIds(inputId, response.toolCalls, expected)
      const record: RecordOf<'harness.model.response'> = { type: 'harness.model.response', inputId, ...(response.text ? { text: response.text } : {}), toolCalls }
      const encoded = encodeRecord(record)
      const used = toolCalls.flatMap((c) => [c.toolCallId, callFingerprint(c.name, c.input)])
      const [status] = await this.command('logModelResponse', () =>
        this.redis.logModelResponse(this.keys.log, this.keys.inputs, this.keys.calls, inputId, expected, encoded, ...used),
      )
      if (status === 'ok') return toolCalls
      if (status !== 'taken') return null
    }
    throw new StorageError('logModelResponse', this.sessionId, new Error('tool call ids kept being taken by concurrent runTool calls'))
  }

  private async storedCallIds(inputId: string, calls: ModelToolCall[], response: number): Promise<ToolCallRecord[]> {
    if (calls.length === 0) return []
    const bases = calls.map((c) => baseCallId(c.toolCallId))
    const used = await this.command('getCall', () => this.redis.hmget(this.keys.calls, ...bases.map(requestField)))
    const seen = new Set<string>()
    return calls.map((call, i) => {
      const base = bases[i]!
      const id = used[i] !== null || seen.has(base) ? scopedCallId(base, inputId, response, i) : base
      seen.add(id)
      return { ...call, toolCallId: id, ...(id !== call.toolCallId ? { modelToolCallId: call.toolCallId } : {}) }
    })
  }

  /** Logs a runTool request under its id once: 'exists' for the same tool and input, 'conflict' for another. */
  async requestCall(toolCallId: string, name: string, input: unknown): Promise<'added' | 'exists' | 'conflict'> {
    const encoded = encodeRecord({ type: 'harness.tool.requested', toolCallId, name, input: input as never })
    const [status] = await this.command('requestCall', () => this.redis.requestCall(this.keys.calls, this.keys.log, toolCallId, callFingerprint(name, input), encoded))
    return status as 'added' | 'exists' | 'conflict'
  }

  /** True when a call of this id was requested or logged in a model response. */
  async callExists(toolCallId: string): Promise<boolean> {
    return (await this.command('getCall', () => this.redis.hexists(this.keys.calls, requestField(toolCallId)))) === 1
  }

  // ---- fenced writes of a tool call attempt ----

  /** `owner` is kept in the call state so the sweeper can enqueue the call again if its job is lost. */
  async beginCall(toolCallId: string, name: string, replay: 'safe' | 'never', owner?: CallOwner): Promise<BeginResult> {
    const [kind, epoch, attempt] = await this.command('beginCall', () =>
      this.redis.beginCall(
        this.keys.calls, this.keys.log, this.stagedKey(toolCallId), indexKeys(this.prefix).openCalls,
        toolCallId, name, replay, Date.now(), this.openMember(toolCallId), owner?.harness ?? '', owner?.inputId ?? '',
      ),
    )
    return { kind: kind as BeginKind, epoch: Number(epoch), attempt: Number(attempt) }
  }

  /**
   * Stores a step value with its log record (fenced). Returns the stored value: ours, or the one a
   * racing attempt stored first. `value === undefined` stores "done, no value".
   */
  async saveStep(fence: Fence, name: string, value: unknown, record: LogRecord): Promise<StoredValue> {
    const encoded = encodeRecord(record)
    const reply = await this.command('saveStep', () =>
      this.redis.saveStep(
        this.keys.calls, this.keys.steps, this.keys.log,
        fence.toolCallId, fence.epoch, stepField(fence.toolCallId, name), encodeValue(value), encoded,
      ), true,
    )
    this.throwIfFenced(fence, reply)
    return reply[0] === 'exists' ? { found: true, value: decodeValue(String(reply[1])) } : { found: true, value }
  }

  /** Logs a question once (fenced) as the step `name`; returns the stored step value. */
  async askQuestion(fence: Fence, name: string, question: Question): Promise<StoredValue> {
    const idx = indexKeys(this.prefix)
    const value = { questionId: question.questionId }
    const record: RecordOf<'harness.tool.ask'> = { type: 'harness.tool.ask', ...question }
    const encoded = encodeRecord(record)
    const reply = await this.command('askQuestion', () =>
      this.redis.askQuestion(
        this.keys.calls, this.keys.steps, this.keys.log, this.keys.questions, idx.openQuestions,
        fence.toolCallId, fence.epoch, stepField(fence.toolCallId, name), encodeValue(value), encoded,
        question.questionId, JSON.stringify(question), Date.now(), this.openMember(question.questionId),
      ), true,
    )
    this.throwIfFenced(fence, reply)
    return reply[0] === 'exists' ? { found: true, value: decodeValue(String(reply[1])) } : { found: true, value }
  }

  async getQuestion(questionId: string): Promise<{ question: Question; answer: StepLookup } | null> {
    assertQuestionId(questionId)
    const [question, answer] = await this.command('getQuestion', () => this.redis.hmget(this.keys.questions, questionId, `${questionId}\0answer`))
    if (!question) return null
    return { question: JSON.parse(question) as Question, answer: answer === null ? { found: false } : { found: true, value: JSON.parse(answer) } }
  }

  /** Open (unanswered, unexpired) questions of this session. */
  async openQuestions(now = Date.now()): Promise<Question[]> {
    const all = await this.command('openQuestions', () => this.redis.hgetall(this.keys.questions))
    return Object.entries(all)
      .filter(([field]) => !field.includes('\0') && !(`${field}\0answer` in all))
      .map(([, raw]) => JSON.parse(raw) as Question)
      .filter((q) => q.expiresAt === undefined || q.expiresAt > now)
  }

  /** Records the first answer (the caller validated it). */
  async answerQuestion(
    questionId: string,
    value: unknown,
    toolCallId: string,
  ): Promise<{ status: 'ok' | 'unknown' | 'answered' | 'expired'; entryId?: string }> {
    const record: RecordOf<'harness.tool.answer'> = { type: 'harness.tool.answer', toolCallId, questionId, value: value as never }
    const encoded = encodeRecord(record)
    const reply = await this.command('answerQuestion', () =>
      this.redis.answerQuestion(
        this.keys.questions, this.keys.log, indexKeys(this.prefix).openQuestions,
        questionId, JSON.stringify(value), encoded, Date.now(), this.openMember(questionId),
      ),
    )
    return { status: reply[0] as 'ok', ...(reply[1] ? { entryId: String(reply[1]) } : {}) }
  }

  /** Stages records at positions `first..` of the call's appends (positions already staged are skipped). */
  async stageRecords(fence: Fence, records: LogRecord[], first = 0): Promise<void> {
    const encoded = records.map(encodeRecord)
    const reply = await this.command('stageRecords', () =>
      this.redis.stageRecords(this.keys.calls, this.stagedKey(fence.toolCallId), fence.toolCallId, fence.epoch, first, ...encoded),
      true,
    )
    this.throwIfFenced(fence, reply)
  }

  /** Marks the attempt parked (sleep/ask): its next begin is a planned resume, not a cut. */
  async parkCall(fence: Fence, kind: 'sleep' | 'ask' | 'agent', until: number): Promise<void> {
    const record: RecordOf<'harness.tool.suspended'> = { type: 'harness.tool.suspended', toolCallId: fence.toolCallId, kind, until }
    const encoded = encodeRecord(record)
    const reply = await this.command('parkCall', () => this.redis.parkCall(this.keys.calls, this.keys.log, fence.toolCallId, fence.epoch, encoded), true)
    this.throwIfFenced(fence, reply)
  }

  /** Lands the kept result with the staged records, atomically and fenced. */
  async landResult(fence: Fence, name: string, outcome: { result?: unknown; error?: ToolErrorPayload }): Promise<string> {
    const record: RecordOf<'harness.tool.result'> = {
      type: 'harness.tool.result',
      toolCallId: fence.toolCallId,
      name,
      ...(outcome.error ? { error: outcome.error } : { result: outcome.result as never }),
    }
    const encoded = encodeRecord(record)
    const reply = await this.command('landResult', () =>
      this.redis.landResult(
        this.keys.calls, this.keys.log, this.stagedKey(fence.toolCallId), indexKeys(this.prefix).openCalls,
        fence.toolCallId, fence.epoch, encoded, this.openMember(fence.toolCallId), indexKeys(this.prefix).events,
      ), true,
    )
    this.throwIfFenced(fence, reply)
    return String(reply[1])
  }

  stagedKey(toolCallId: string): string {
    return `${this.keys.staged}:${toolCallId}`
  }

  openMember(id: string): string {
    return `${this.sessionId}|${id}`
  }

  private throwIfFenced(fence: Fence, reply: Array<string | number>): void {
    if (reply[0] === 'fenced') {
      const current = Number(reply[1])
      throw new FencedError(fence.toolCallId, fence.epoch, current < 0 ? null : current)
    }
  }

  private parseEntry([id, fields]: RawEntry): LogEntry | null {
    const rawJson = fields[1]
    let record: LogRecord | 'skip'
    try {
      if (fields[0] !== 'r' || rawJson === undefined) throw new Error('no "r" field')
      record = parseRecord(JSON.parse(rawJson), 'read')
    } catch (error) {
      void this.redis.hset(indexKeys(this.prefix).corrupt, this.sessionId, id).catch(() => {})
      throw new MalformedEntryError(this.sessionId, id, (error as Error).message)
    }
    return record === 'skip' ? null : { id, record }
  }
}

type RawEntry = [string, string[]]

function encodeValue(value: unknown): string {
  return value === undefined ? NO_VALUE : JSON.stringify(value)
}

function decodeValue(stored: string): unknown {
  return stored === NO_VALUE ? undefined : JSON.parse(stored)
}

/** Validates a record against its schema and encodes it for the stream (harness records as parsed: no unknown fields). */
export function encodeRecord(record: LogRecord): string {
  let parsed: LogRecord | 'skip'
  try {
    parsed = parseRecord(record)
    if (parsed === 'skip') throw new Error(`unknown reserved type ${record.type}`)
  } catch (error) {
    throw new InvalidRecordError(`Record refused on write: ${(error as Error).message}`)
  }
  return JSON.stringify(parsed)
}
