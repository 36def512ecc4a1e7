import type { Logger } from 'pino'
import { overflowSizes } from '../compaction/index.js'
import { causeText } from '../errors/base.js'
import type { Harness } from '../core/index.js'
import type { LogEntry, RecordOf, SessionLog } from '../log/index.js'
import type { AttemptHold } from '../tool/index.js'
import { runCompaction, type CompactionOutcome, type CompactionRun } from './compact.js'
import { countView } from './compactCount.js'
import type { TurnFold } from './fold.js'
import type { ModelCallError } from './modelErrors.js'
import { decideModelError } from './modelRetry.js'
import type { TurnView } from './view.js'

type Failure = Omit<RecordOf<'harness.input.settled'>, 'type' | 'inputId'>

/** What the turn does next: call the model with this view, fold again (a compaction landed, or a retry was logged), or settle. */
export type CompactionStep = { next: 'call' } | { next: 'again' } | { next: 'settle'; failure: Failure }

/** A turn's model call, before it is made: what its compaction needs of the turn. */
export interface TurnCompaction {
  harness: Harness
  log: SessionLog
  logger: Logger
  inputId: string
  fold: TurnFold
  conversation: LogEntry[]
  joined: readonly string[]
  view: TurnView
  signal: AbortSignal
  hold?: AttemptHold | undefined
}

/** Background compactions running in this process, by session and the compaction they build on. */
const background = new Map<string, Promise<CompactionOutcome>>()
/** Background summaries run beside the turn, not on its signal: bounded on their own. */
const BACKGROUND_TIMEOUT_MS = 10 * 60_000

const keyOf = (t: TurnCompaction) => `${t.log.stream.prefix}\0${t.log.sessionId}\0${t.view.compaction?.id ?? ''}`

const overflowFailure = (message: string): Failure => ({ outcome: 'failed', error: { code: 'context_overflow', message } })

/**
 * Before a turn's model call (docs/compaction.md): a view counted over `maxTokens` is compacted first
 * (a background compaction of the same view in this process is waited for instead), and the turn
 * folds again to see it; over `background.atTokens` a compaction starts beside the turn, which does
 * not wait for it (it applies at the first model call after it lands). A view still over
 * `contextWindow` after that fails the turn with `context_overflow`, without a call.
 */
export async function compactBeforeModelCall(t: TurnCompaction): Promise<CompactionStep> {
  const options = t.harness.compaction
  if (!options) return { next: 'call' }
  const { tokens } = countView(t.harness, t.view)
  const key = keyOf(t)
  const running = background.get(key)
  if (tokens > options.maxTokens) {
    if (running) {
      await running
      return { next: 'again' }
    }
    const step = await outcomeStep(t, await runCompaction(run(t, 'budget', t.signal)))
    if (step.next !== 'call') return step
    const window = options.contextWindow
    if (window !== undefined && tokens > window)
      return {
        next: 'settle',
        failure: overflowFailure(
          `The model's view counts ~${tokens} tokens, over contextWindow (${window}), and compaction could cut nothing more (the running turn alone may be that large).`,
        ),
      }
    t.logger.warn(
      { tokens, maxTokens: options.maxTokens },
      'the view is over maxTokens and compaction cut nothing more; calling the model with it',
    )
    return step
  }
  if (options.background && tokens > options.background.atTokens && !running) {
    const signal = AbortSignal.timeout(BACKGROUND_TIMEOUT_MS)
    const started = runCompaction({ ...run(t, 'background', signal), hold: undefined }).finally(() => background.delete(key))
    background.set(key, started)
    started.then(
      (outcome) => {
        if (outcome.status === 'model_error' || outcome.status === 'failed')
          t.logger.warn(
            { err: outcome.status === 'model_error' ? outcome.error.info : outcome.error },
            'background compaction failed; the next model call past atTokens starts another',
          )
      },
      (err: unknown) => t.logger.warn({ err }, 'background compaction failed'),
    )
  }
  return { next: 'call' }
}

/**
 * A model call the provider refused for its context's size: compact once (the provider's count is
 * the truth, so the strategy cuts as for an overflow) and call again in the same turn; a second
 * overflow after that compaction, or one where nothing is left to compact, fails the turn with
 * `context_overflow` and the sizes in its message.
 */
export async function healContextOverflow(
  t: TurnCompaction,
  error: ModelCallError,
  compactedBefore: boolean,
): Promise<CompactionStep & { healed?: true }> {
  const { tokens } = countView(t.harness, t.view)
  const sizes = overflowSizes(error.info.message)
  const said =
    sizes.tokens !== undefined
      ? ` (the provider counted ${sizes.tokens} tokens of ${sizes.limit ?? '?'})`
      : sizes.limit !== undefined
        ? ` (the provider's limit: ${sizes.limit} tokens)`
        : ''
  const fail = (why: string): CompactionStep => ({
    next: 'settle',
    failure: overflowFailure(
      `The model's context overflowed ${why}: the view counts ~${tokens} tokens here${said}. The provider: ${error.info.message}`,
    ),
  })
  if (compactedBefore) return fail('again after a compaction')
  const outcome = await runCompaction(run(t, 'overflow', t.signal))
  if (outcome.status === 'nothing') return fail('and there was nothing left to compact')
  if (outcome.status === 'failed') return fail(`and the compaction failed (${causeText(outcome.error)})`)
  // a compaction landed (this one, or another first): the next overflow at this call is the second
  const healed = outcome.status === 'compacted' || outcome.status === 'stale'
  return { ...(await outcomeStep(t, outcome)), ...(healed ? { healed: true as const } : {}) }
}

function run(t: TurnCompaction, reason: CompactionRun['reason'], signal: AbortSignal): CompactionRun {
  const { harness, log, logger, conversation, inputId, joined, view, hold } = t
  return { harness, log, logger, conversation, inputId, joined, view, reason, signal, hold }
}

/** A compaction's outcome as the turn's next step; a failed summary call goes to `turn.onModelError` like the turn's own calls. */
async function outcomeStep(t: TurnCompaction, outcome: CompactionOutcome): Promise<CompactionStep> {
  switch (outcome.status) {
    case 'compacted':
    case 'stale':
      return { next: 'again' }
    case 'nothing':
      return { next: 'call' }
    case 'failed':
      t.logger.error({ err: outcome.error }, 'compaction failed; the model is called with the view as it is')
      return { next: 'call' }
    case 'model_error': {
      const { failure } = await decideModelError(t.harness, t.log, t.fold, t.inputId, outcome.error, { compaction: true })
      t.logger.warn({ err: outcome.error.info }, 'the summary call of a compaction failed')
      return failure ? { next: 'settle', failure } : { next: 'again' }
    }
  }
}
