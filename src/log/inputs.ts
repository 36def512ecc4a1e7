import { StorageError } from '../errors.js'
import { baseCallId, callFingerprint, scopedCallId } from './callIds.js'
import { messageKey, openMember } from './formats.js'
import { assertInputId, assertQuestionId, indexKeys, requestField } from './keys.js'
import type { ModelUsage, RecordOf, ToolCallRecord } from './records.js'
import { encodeRecord, LogStream } from './stream.js'

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

export type StoredValue = { found: true; value: unknown }
export type StepLookup = { found: false } | StoredValue

/** A tool call as the model gave it, before it gets its stored id. */
export type ModelToolCall = Omit<ToolCallRecord, 'modelToolCallId'>

/**
 * The inputs (turns) and questions of a session: an input logged once per inputId, its model
 * responses, its settle; questions of step.ask and their first valid answer.
 */
export class SessionInputs extends LogStream {
  async addInput(
    inputId: string,
    text: string,
    harness = '',
    parent?: ParentCall,
  ): Promise<{ status: 'added' | 'exists' | 'conflict'; entryId?: string }> {
    assertInputId(inputId)
    const idx = indexKeys(this.prefix)
    const record = encodeRecord({ type: 'harness.input', inputId, text, at: Date.now() })
    const reply = await this.script(
      'addInput',
      [this.keys.log, this.keys.inputs, idx.sessions, idx.openTurns],
      [
        inputId,
        text,
        record,
        Date.now(),
        this.sessionId,
        openMember(this.sessionId, inputId),
        harness,
        parent ? JSON.stringify(parent) : '',
      ],
    )
    return reply[0] === 'conflict' ? { status: 'conflict' } : { status: reply[0], entryId: reply[1] }
  }

  async getInput(inputId: string): Promise<InputState | null> {
    const raw = await this.command('getInput', () => this.redis.hget(this.keys.inputs, inputId))
    return raw ? (JSON.parse(raw) as InputState) : null
  }

  /** The settled record of an input, once it has settled. */
  async getSettled(inputId: string): Promise<RecordOf<'harness.input.settled'> | null> {
    const input = await this.getInput(inputId)
    if (input?.status !== 'settled' || !input.settledId) return null
    const entry = await this.readEntry(input.settledId)
    return entry?.record.type === 'harness.input.settled' ? (entry.record as RecordOf<'harness.input.settled'>) : null
  }

  /** Settles the input once: 'settled' the first time, 'already' after, 'unknown' for no such input. */
  async settleInput(record: RecordOf<'harness.input.settled'>): Promise<'settled' | 'already' | 'unknown'> {
    const idx = indexKeys(this.prefix)
    const [status] = await this.script(
      'settleInput',
      [this.keys.log, this.keys.inputs, idx.openTurns],
      [
        record.inputId,
        encodeRecord(record),
        openMember(this.sessionId, record.inputId),
        idx.events,
        messageKey('input', this.sessionId, record.inputId),
      ],
    )
    return status
  }

  /**
   * Logs a model response if the turn still has `expected` responses, with a stored id for each tool
   * call (callIds.ts): the model's id where it is safe and unused in the session, else one scoped by
   * this response. Returns the logged calls, or null when another run of the turn logged first.
   */
  async logModelResponse(
    inputId: string,
    response: { text?: string; messageId?: string; toolCalls: ModelToolCall[]; usage?: ModelUsage },
    expected: number,
  ): Promise<ToolCallRecord[] | null> {
    // another writer can take an id between our look-up and the write only by a racing runTool: pick again
    for (let tries = 0; tries < 3; tries++) {
      const toolCalls = await this.storedCallIds(inputId, response.toolCalls, expected)
      const record = encodeRecord({
        type: 'harness.model.response',
        inputId,
        ...(response.text ? { text: response.text } : {}),
        ...(response.messageId ? { messageId: response.messageId } : {}),
        toolCalls,
        ...(response.usage ? { usage: response.usage } : {}),
      })
      const used = toolCalls.flatMap((c) => [c.toolCallId, callFingerprint(c.name, c.input)])
      const [status] = await this.script(
        'logModelResponse',
        [this.keys.log, this.keys.inputs, this.keys.calls],
        [inputId, expected, record, ...used],
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

  async getQuestion(questionId: string): Promise<{ question: Question; answer: StepLookup } | null> {
    assertQuestionId(questionId)
    const [question, answer] = await this.command('getQuestion', () =>
      this.redis.hmget(this.keys.questions, questionId, `${questionId}\0answer`),
    )
    if (!question) return null
    return {
      question: JSON.parse(question) as Question,
      answer: answer === null ? { found: false } : { found: true, value: JSON.parse(answer) },
    }
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
    const record = encodeRecord({ type: 'harness.tool.answer', toolCallId, questionId, value })
    const reply = await this.script(
      'answerQuestion',
      [this.keys.questions, this.keys.log, indexKeys(this.prefix).openQuestions],
      [questionId, JSON.stringify(value), record, Date.now(), openMember(this.sessionId, questionId)],
    )
    return reply[0] === 'ok' ? { status: 'ok', entryId: reply[1] } : { status: reply[0] }
  }
}
