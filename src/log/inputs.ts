import { StorageError } from '../errors/index.js'
import { baseCallId, callFingerprint, scopedCallId, textFingerprint } from './callIds.js'
import { messageKey, openMember } from './formats.js'
import { assertInputId, requestField, turnTagIndexKey, turnToolIndexKey, usageDay, usageDayKey } from './keys.js'
import { usageCounts } from './usageTotals.js'
import type { BusyMode } from '../core/index.js'
import { CONVERSATION_TYPES, conversationOf, type ModelUsage, type RecordOf, type ToolCallRecord, type TurnRecordType } from './records.js'
import { encodeRecord, isRecord, type LogEntry, type LogStream } from './stream.js'
import { scripts } from './commands/index.js'
import { needsOpening, openInput, type Sealed } from './sealedRecords.js'
import { getQuestion, openQuestions, type Question } from './questions.js'
import type { AddedInput, InputState, InputTags, ParentCall } from './inputState.js'

export type { Question } from './questions.js'

/** A tool call as the model gave it, before it gets its stored id. */
export type ModelToolCall = Omit<ToolCallRecord, 'modelToolCallId'>

/**
 * The inputs (turns) and questions of a session: an input logged once per inputId, its model
 * responses, its settle; questions of step.ask and their first valid answer. A part of SessionLog
 * (sessionLog.ts) over the session's stream.
 */
export class SessionInputs {
  constructor(readonly stream: LogStream) {}

  async addInput(
    inputId: string,
    text: string,
    harness = '',
    options: { parent?: ParentCall; busy?: BusyMode; context?: unknown; priority?: number } & InputTags = {},
  ): Promise<AddedInput> {
    const { parent, busy = 'queue', context, metadata, principal, priority } = options
    assertInputId(inputId)
    const tags = harness ? Object.entries(metadata ?? {}) : []
    const tagIndexes = tags.map(([key, value]) =>
      turnTagIndexKey(this.stream.prefix, this.stream.shard, this.stream.shards, harness, key, value),
    )
    // the inputs hash keeps the record's sealed text and context (docs/encryption.md)
    const sealed = await this.stream.sealed({
      type: 'harness.input',
      inputId,
      text,
      at: Date.now(),
      ...(context !== undefined ? { context } : {}),
      ...(metadata ? { metadata } : {}),
      ...(principal !== undefined ? { principal } : {}),
    })
    const record = encodeRecord(sealed)
    const reply = await this.stream.script(scripts.addInput, {
      keys: { ...this.stream.scriptKeys, openIndex: this.stream.turnIndex(harness, 'open'), tagIndexes },
      args: {
        inputId,
        text: sealed.text,
        record,
        now: Date.now(),
        sessionId: this.stream.sessionId,
        openMember: openMember(this.stream.sessionId, inputId),
        harness,
        parent: parent ? JSON.stringify(parent) : '',
        busy,
        context: sealed.context !== undefined ? JSON.stringify(sealed.context) : '',
        metadata: metadata && Object.keys(metadata).length > 0 ? JSON.stringify(metadata) : '',
        principal: principal ?? '',
        priority: priority === undefined ? '' : String(priority),
        textCheck: this.stream.codec ? textFingerprint(text) : '',
      },
    })
    if (reply[0] === 'added')
      return { status: 'added', entryId: reply[1], disposition: reply[2], ...(reply[3] ? { running: reply[3] } : {}) }
    if (reply[0] === 'exists') return { status: 'exists', entryId: reply[1], settled: reply[2] === 'settled', first: reply[3] === 'first' }
    if (reply[0] === 'busy') return { status: 'busy', running: reply[1] }
    return { status: 'conflict' }
  }

  async getInput(inputId: string): Promise<InputState | null> {
    const raw = await this.stream.command('getInput', () => this.stream.redis.hget(this.stream.keys.inputs, inputId))
    return raw ? openInput(this.stream.codec, this.stream.sessionId, JSON.parse(raw) as InputState) : null
  }

  /** The settled record of an input, once it has settled. */
  async getSettled(inputId: string): Promise<RecordOf<'harness.input.settled'> | null> {
    const input = await this.getInput(inputId)
    if (input?.status !== 'settled' || !input.settledId) return null
    const entry = await this.stream.readEntry(input.settledId)
    return entry && isRecord(entry, 'harness.input.settled') ? entry.record : null
  }

  /**
   * Settles the input once: 'settled' the first time, 'already' after, 'unknown' for no such input.
   * `next`: the input now first in the session's line, whose turn should run (its job is enqueued by
   * the caller: settleTurn, the one settler every path uses).
   */
  async settle(
    record: RecordOf<'harness.input.settled'>,
    harness: string,
  ): Promise<{ status: 'settled' | 'already' | 'unknown'; next?: string }> {
    const reply = await this.stream.script(scripts.settleInput, {
      keys: {
        ...this.stream.scriptKeys,
        openIndex: this.stream.turnIndex(harness, 'open'),
        outcomeIndex: this.stream.turnIndex(harness, record.outcome),
        usageDay: this.usageDayKey(harness),
      },
      args: {
        inputId: record.inputId,
        record: encodeRecord(await this.stream.sealed(record)),
        openMember: openMember(this.stream.sessionId, record.inputId),
        publish: this.stream.publish,
        channel: this.stream.index.events,
        messageKey: messageKey('input', this.stream.sessionId, record.inputId),
        outcome: record.outcome,
        now: Date.now(),
      },
    })
    return reply[0] === 'unknown' ? { status: 'unknown' } : { status: reply[0], ...(reply[2] ? { next: reply[2] } : {}) }
  }

  /**
   * The session's conversation: its inputs, model responses, tool results and settles, in log order,
   * from the conversation projection in one round trip (O(the conversation), not O(the log)). A
   * projection that misses older entries (none yet, or made on a log that held entries) is filled in
   * from the log once, then read again. `since: 'compaction'`: from the latest compaction's read
   * pointer on (the entry after its last cut turn's input: what a model view needs, O(the view));
   * `partial` says whether it started there. `sealed: 'mask'`: what this process cannot open reads as
   * [encrypted] (a dashboard without the key).
   */
  async conversation(options?: { sealed?: Sealed }): Promise<LogEntry[]>
  async conversation(options: { since: 'compaction' }): Promise<{ entries: LogEntry[]; partial: boolean }>
  async conversation(
    options: { since?: 'compaction'; sealed?: Sealed } = {},
  ): Promise<LogEntry[] | { entries: LogEntry[]; partial: boolean }> {
    const { since, sealed } = options
    for (;;) {
      const [header, raw, partial] = await this.stream.script(scripts.readConversation, {
        keys: this.stream.scriptKeys,
        args: { since: since ?? 'all' },
      })
      if (header === '^') {
        const parsed = raw.flatMap((entry) => this.stream.parseEntry(entry) ?? [])
        const opened = parsed.some((e) => needsOpening(e.record))
        const entries = opened ? await Promise.all(parsed.map((e) => this.stream.opened(e, sealed))) : parsed
        return since ? { entries, partial: partial === '1' } : entries
      }
      const first = header.slice(1)
      const older = conversationOf(await this.stream.read({ ...(first ? { before: first } : {}), types: CONVERSATION_TYPES }))
      await this.stream.script(scripts.fillConversation, {
        keys: this.stream.scriptKeys,
        args: { entryIds: older.map((e) => e.id) },
      })
    }
  }

  /** The input first in the session's line (its turn is the one that runs), if any. */
  async firstInLine(): Promise<string | undefined> {
    return (await this.stream.command('firstInLine', () => this.stream.redis.zrange(this.stream.keys.line, '0', '0')))[0]
  }

  /**
   * Logs a model response if the turn still has `expected` responses, with a stored id for each tool
   * call (callIds.ts): the model's id where it is safe and unused in the session, else one scoped by
   * this response; the turn joins `harness`'s tool index of each tool called (a well-formed name: cjson
   * refuses a lone surrogate). Returns the logged calls, or null when another run of the turn logged first.
   */
  async logModelResponse(
    inputId: string,
    response: { text?: string; messageId?: string; toolCalls: ModelToolCall[]; usage?: ModelUsage; joined?: string[] },
    expected: number,
    harness = '',
    tryId = '',
  ): Promise<ToolCallRecord[] | null> {
    const tools = harness ? [...new Set(response.toolCalls.map((c) => c.name))].filter((n) => Buffer.from(n).toString() === n) : []
    const toolIndexes = tools.map((tool) => turnToolIndexKey(this.stream.prefix, this.stream.shard, this.stream.shards, harness, tool))
    // another writer can take an id between our look-up and the write only by a racing runTool: pick again
    for (let tries = 0; tries < 3; tries++) {
      const toolCalls = await this.storedCallIds(inputId, response.toolCalls, expected)
      const record = encodeRecord(
        await this.stream.sealed({
          type: 'harness.model.response',
          inputId,
          ...(response.text ? { text: response.text } : {}),
          ...(response.messageId ? { messageId: response.messageId } : {}),
          toolCalls,
          ...(response.usage ? { usage: response.usage } : {}),
          ...(response.joined ? { joined: response.joined } : {}),
        }),
      )
      const used = toolCalls.flatMap((c) => [c.toolCallId, callFingerprint(c.name, c.input, { inputId, inputTooLarge: c.inputTooLarge })])
      const [status] = await this.stream.script(scripts.logModelResponse, {
        keys: { ...this.stream.scriptKeys, usageDay: this.usageDayKey(harness), toolIndexes },
        args: {
          inputId,
          expected,
          record,
          member: openMember(this.stream.sessionId, inputId),
          tools: JSON.stringify(tools),
          counts: usageCounts(response.usage),
          model: response.usage?.model ?? '',
          tryId,
          idsAndFingerprints: used,
        },
      })
      if (status === 'ok') return toolCalls
      if (status !== 'taken') return null
    }
    throw new StorageError(
      'logModelResponse',
      this.stream.sessionId,
      new Error('tool call ids kept being taken by concurrent runTool calls'),
    )
  }

  /**
   * Logs a turn record (retry, paused, resumed, finish) while the turn is open and, with `expected`,
   * still has that many responses (turnRecord.lua). 'ok' with its entry id, else why not.
   */
  async logTurnRecord(
    record: RecordOf<TurnRecordType>,
    expected?: number,
  ): Promise<{ status: 'ok'; entryId: string } | { status: 'stale' | 'unknown' | 'settled' | 'not_paused' }> {
    const mark = record.type === 'harness.turn.paused' ? 'paused' : record.type === 'harness.turn.resumed' ? 'resumed' : ''
    const reply = await this.stream.script(scripts.turnRecord, {
      keys: this.stream.scriptKeys,
      args: {
        inputId: record.inputId,
        expected: expected ?? '',
        record: encodeRecord(await this.stream.sealed(record)),
        mark,
        attempt: record.type === 'harness.turn.retry' ? record.attempt : '',
      },
    })
    return reply[0] === 'ok' ? { status: 'ok', entryId: reply[1] } : { status: reply[0] }
  }

  /**
   * Counts a model call try that has no model response in the log (a harness.usage record and the
   * totals, logUsage.lua), once per `progress` of the turn: 'counted' when a try from there was already.
   */
  async logUsage(
    record: RecordOf<'harness.usage'>,
    progress: number,
    harness: string,
    tryId = '',
    calls = 1,
  ): Promise<'ok' | 'counted' | 'unknown'> {
    const [status] = await this.stream.script(scripts.logUsage, {
      keys: { ...this.stream.scriptKeys, usageDay: this.usageDayKey(harness) },
      args: {
        inputId: record.inputId,
        progress,
        record: encodeRecord(record),
        counts: usageCounts(record.usage, calls),
        model: record.usage.model ?? '',
        tryId,
      },
    })
    return status
  }

  /** The day hash of `harness`'s spend in this session's shard, for a write now (keys.ts usageDayKey). */
  usageDayKey(harness: string): string {
    return usageDayKey(this.stream.prefix, this.stream.shard, this.stream.shards, harness, usageDay(Date.now()))
  }

  private async storedCallIds(inputId: string, calls: ModelToolCall[], response: number): Promise<ToolCallRecord[]> {
    if (calls.length === 0) return []
    const bases = calls.map((c) => baseCallId(c.toolCallId))
    const used = await this.stream.command('getCall', () => this.stream.redis.hmget(this.stream.keys.calls, ...bases.map(requestField)))
    const seen = new Set<string>()
    return calls.map((call, i) => {
      const base = bases[i]!
      const id = used[i] !== null || seen.has(base) ? scopedCallId(base, inputId, response, i) : base
      seen.add(id)
      return { ...call, toolCallId: id, ...(id !== call.toolCallId ? { modelToolCallId: call.toolCallId } : {}) }
    })
  }

  /** A question with its first answer; `closed`: its call was cancelled, so no answer is taken any more. */
  getQuestion(questionId: string, sealed?: Sealed) {
    return getQuestion(this.stream, questionId, sealed)
  }

  /** Open (unanswered, unexpired, not closed by a cancel) questions of this session. */
  openQuestions(now = Date.now(), sealed?: Sealed): Promise<Question[]> {
    return openQuestions(this.stream, now, sealed)
  }
}
