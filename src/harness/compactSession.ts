import { pino, type Logger } from 'pino'
import { CompactionConfigError, CompactionFailedError } from '../errors/index.js'
import type { Harness } from '../core/index.js'
import { isRecord, type SessionLog } from '../log/index.js'
import { runCompaction, turnView, type CompactionOutcome } from '../turn/index.js'
import { checkPrincipal } from './tags.js'

/** What `session.compact()` did: whether it logged a compaction (its entry id), and the view's token count before and after. */
export interface Compacted {
  compacted: boolean
  entryId?: string
  tokens: { before: number; after?: number }
}

export interface CompactSessionDeps {
  harness: Harness
  log: SessionLog
  logger?: Logger
  checkDeployment(): Promise<void> | undefined
}

/** A wait `turn.onModelError` asks for that session.compact() waits for in the caller's process; a longer one gives up. */
const MAX_WAIT_MS = 60_000
/** How many times a compaction another one overtook (stale) is tried again on the new view. */
const MAX_STALE = 3

/**
 * session.compact(): one compaction of the view the running turn's next model call (between turns: the
 * next turn's) would get, in the caller's process, with the harness's strategy and `reason: 'manual'`.
 * A summary call that fails goes to `turn.onModelError` (`compaction: true`); its retries are waited
 * for here, up to a minute each.
 */
export async function compactSession(deps: CompactSessionDeps, options: { principal?: string }): Promise<Compacted> {
  const { harness, log } = deps
  if (!harness.compaction)
    throw new CompactionConfigError(
      `session.compact() of harness "${harness.name}"`,
      'the harness has no compaction option; give defineHarness({ compaction: { maxTokens } })',
    )
  if (options.principal !== undefined) checkPrincipal(options.principal)
  await deps.checkDeployment()
  const logger = (deps.logger ?? silent).child({ sessionId: log.sessionId })
  let retries = 0
  let stale = 0
  for (;;) {
    const inputId = (await log.inputs.firstInLine()) ?? ''
    const joined = inputId ? ((await log.inputs.getInput(inputId))?.steered ?? []) : []
    const read = await log.inputs.conversation({ since: 'compaction' })
    // a rerun of a turn a compaction cut: its input lies before the read pointer
    const found = !inputId || read.entries.some((e) => isRecord(e, 'harness.input') && e.record.inputId === inputId)
    const conversation = read.partial && !found ? await log.inputs.conversation() : read.entries
    const view = turnView(conversation, inputId, joined)
    const signal = AbortSignal.timeout(10 * 60_000)
    const outcome: CompactionOutcome = await runCompaction({
      harness,
      log,
      logger,
      conversation,
      ...(inputId ? { inputId } : {}),
      joined,
      view,
      reason: 'manual',
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
      signal,
    })
    switch (outcome.status) {
      case 'compacted':
        return { compacted: true, entryId: outcome.entryId, tokens: { before: outcome.before, after: outcome.after } }
      case 'nothing':
        return { compacted: false, tokens: { before: outcome.before } }
      case 'stale':
        if (++stale > MAX_STALE) return { compacted: false, tokens: { before: outcome.before } }
        continue
      case 'failed':
        throw new CompactionFailedError(log.sessionId, outcome.error)
      case 'model_error': {
        const error = outcome.error.info
        const decided = await Promise.resolve(
          harness.turn.onModelError({ sessionId: log.sessionId, inputId, error, retries, compaction: true }),
        ).catch(() => undefined)
        const delay = decided?.action === 'retry' ? Math.max(0, decided.delayMs) : Infinity
        if (!(delay <= MAX_WAIT_MS)) throw new CompactionFailedError(log.sessionId, outcome.error)
        retries++
        await new Promise((resolve) => setTimeout(resolve, delay))
      }
    }
  }
}

const silent = pino({ level: 'silent' })
