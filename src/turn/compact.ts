import type { Logger } from 'pino'
import { RESET, compactionSummary, nextCompaction } from '../compaction/index.js'
import type { CompactionReason, Harness, SummarizeRequest } from '../core/index.js'
import type { LogEntry, ModelUsage, SessionLog } from '../log/index.js'
import { resolveSecrets, type AttemptHold } from '../tool/index.js'
import { countView, overheadTokens, viewTurns } from './compactCount.js'
import { callModel } from './model.js'
import { ModelCallError } from './modelErrors.js'
import { turnView, type TurnView } from './view.js'
import { billedUsage, sumUsage } from './spend.js'
import { countModelUsage } from '../telemetry/index.js'

/** One compaction of a view: of the running turn's next model call, or of session.compact(). */
export interface CompactionRun {
  harness: Harness
  log: SessionLog
  logger: Logger
  /** The conversation the view was built from, the turn (absent: between turns) and its joined inputs. */
  conversation: LogEntry[]
  inputId?: string
  joined: readonly string[]
  view: TurnView
  reason: CompactionReason
  principal?: string
  signal: AbortSignal
  /** A summary call is made only while the turn's job lock (and limit slot) is held, as the turn's own calls. */
  hold?: AttemptHold | undefined
}

/** What a compaction came to. `stale`: another compaction of this view landed first (R22); this one is dropped. */
export type CompactionOutcome =
  | { status: 'compacted'; entryId: string; before: number; after: number }
  | { status: 'nothing' | 'stale'; before: number }
  | { status: 'model_error'; error: ModelCallError; before: number }
  | { status: 'failed'; error: unknown; before: number }

/**
 * Runs the harness's strategy over a view and logs the result once (R22): the plan is made for the
 * view's latest compaction (its `base`), and logCompaction writes it only while that is still the
 * latest, so a crash before the write leaves no record, one after it exactly one, and of two workers
 * (or a turn and session.compact) one lands. Summary calls are the harness's model calls: their usage
 * is kept on the record, their text is redacted of session secrets, a provider failure comes back as
 * `model_error` for `turn.onModelError` to decide.
 */
export async function runCompaction(run: CompactionRun): Promise<CompactionOutcome> {
  const { harness, log, view, reason } = run
  const options = harness.compaction
  const before = countView(harness, view, 'estimate').tokens
  if (!options) return { status: 'nothing', before }
  let usage: ModelUsage | undefined
  let calls = 0
  const model = async (request: SummarizeRequest): Promise<string> => {
    const summarizer: Harness = {
      ...harness,
      adapter: request.adapter ?? harness.adapter,
      tools: [],
      systemPrompts: request.systemPrompts ?? [],
    }
    const response = await callModel(summarizer, request.messages, run.signal, undefined, undefined, run.hold)
    calls++
    usage = sumUsage(usage, billedUsage(summarizer, response.usage, { messages: request.messages, output: response.text ?? '' }))
    return response.text ?? ''
  }
  const { turns, currentTokens } = viewTurns(view)
  const previous = view.compaction
  const summary = previous ? compactionSummary(previous.record) : undefined
  let plan
  try {
    plan = await options.strategy.compact({
      sessionId: log.sessionId,
      reason,
      turns,
      currentTokens,
      overheadTokens: overheadTokens(harness),
      ...(summary !== undefined ? { summary } : {}),
      tokens: before,
      maxTokens: options.maxTokens,
      model,
      signal: run.signal,
    })
    if (!plan) return { status: 'nothing', before }
    const record = nextCompaction(previous && { ...previous.record, entryId: previous.id }, plan, view.turns, {
      strategy: options.strategy.name,
      reason,
      ...(run.inputId ? { inputId: run.inputId } : {}),
      ...(run.principal ? { principal: run.principal } : {}),
      ...(usage ? { usage } : {}),
    })
    if (!record) return { status: 'nothing', before }
    // Redis never holds a session secret (R6): a summary that repeats one is redacted
    if (record.summary && harness.secrets) record.summary = (await resolveSecrets(harness, log.sessionId)).redact(record.summary)
    const summaryBytes = Buffer.byteLength(record.summary ?? '')
    if (summaryBytes > harness.durability.maxValueBytes)
      throw new Error(`the summary is ${summaryBytes} bytes, over maxValueBytes (${harness.durability.maxValueBytes})`)
    const after = countView(
      harness,
      turnView(
        [...run.conversation, { id: 'pending', record: { ...record, tokens: { before, after: 0 } } }],
        run.inputId ?? '',
        run.joined,
      ),
      'estimate',
    ).tokens
    const logged = await log.compactions.log({ ...record, tokens: { before, after } }, harness.name, calls, harness.compaction?.trimAfterMs)
    if (logged.status === 'stale') {
      run.logger.info({ latest: logged.entryId, base: record.base }, 'compaction dropped: a newer compaction landed first')
      return { status: 'stale', before }
    }
    if (record.usage) countModelUsage(harness.name, record.usage)
    run.logger.info(
      { entryId: logged.entryId, reason, strategy: record.strategy, before, after, through: record.through?.inputId },
      'compacted',
    )
    return { status: 'compacted', entryId: logged.entryId, before, after }
  } catch (error) {
    if (error instanceof ModelCallError && !run.signal.aborted) return { status: 'model_error', error, before }
    if (run.signal.aborted) throw error
    return { status: 'failed', error, before }
  }
}

/** session.reset(note): what it is given (the view of the next model call, as for a compaction) and the note. */
export interface ResetRun {
  harness: Harness
  log: SessionLog
  conversation: LogEntry[]
  inputId?: string
  joined: readonly string[]
  view: TurnView
  /** What the model sees in place of every turn before the running one (none: nothing). Already redacted. */
  note?: string
  principal?: string
}

/**
 * A reset of the model's view, logged as a compaction (strategy and reason 'reset') on the view's
 * latest one: every turn before the running one (all, between turns) leaves the view, and the note
 * (undefined: nothing) stands in their place with no heading. 'stale' when another compaction landed
 * first: the caller builds the view again and tries again.
 */
export async function runReset(run: ResetRun): Promise<{ status: 'ok' | 'stale'; entryId: string; before: number; after: number }> {
  const { harness, log, view } = run
  const before = countView(harness, view, 'estimate').tokens
  const previous = view.compaction
  const last = view.turns.at(-1)
  const through = last ? { inputId: last.inputId, entryId: last.entryId } : previous?.record.through
  const record = {
    type: 'harness.compaction' as const,
    strategy: RESET,
    reason: RESET,
    ...(previous ? { base: previous.id } : {}),
    ...(through ? { through } : {}),
    ...(run.note ? { summary: run.note } : {}),
    ...(run.principal ? { principal: run.principal } : {}),
    at: Date.now(),
  }
  const pending = { id: 'pending', record: { ...record, tokens: { before, after: 0 } } }
  const after = countView(harness, turnView([...run.conversation, pending], run.inputId ?? '', run.joined), 'estimate').tokens
  const logged = await log.compactions.log({ ...record, tokens: { before, after } }, '', 0, harness.compaction?.trimAfterMs)
  return { ...logged, before, after }
}
