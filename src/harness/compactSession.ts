import { pino, type Logger } from 'pino'
import { CompactionConfigError, CompactionFailedError, ValueTooLargeError } from '../errors/index.js'
import type { Harness } from '../core/index.js'
import { isRecord, type SessionLog } from '../log/index.js'
import { runCompaction, runReset, turnView, type CompactionOutcome } from '../turn/index.js'
import { assertNoSecrets } from './callerSecrets.js'
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
    const { inputId, joined, conversation, view } = await nextView(log)
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

/** The view the running turn's next model call (between turns: the next turn's) would get, and what it was built from. */
async function nextView(log: SessionLog) {
  const inputId = (await log.inputs.firstInLine()) ?? ''
  const joined = inputId ? ((await log.inputs.getInput(inputId))?.steered ?? []) : []
  const read = await log.inputs.conversation({ since: 'compaction' })
  // a rerun of a turn a compaction cut: its input lies before the read pointer
  const found = !inputId || read.entries.some((e) => isRecord(e, 'harness.input') && e.record.inputId === inputId)
  const conversation = read.partial && !found ? await log.inputs.conversation() : read.entries
  return { inputId, joined, conversation, view: turnView(conversation, inputId, joined) }
}

/** What `session.reset(note?)` logged: the reset's entry id, and the view's token count before and after. */
export interface ResetDone {
  entryId: string
  tokens: { before: number; after: number }
}

/**
 * session.reset(note?) (docs/compaction.md, "Reset"): the model's context starts over from the note.
 * Every turn before the running one (all, between turns) leaves the view of every later model call,
 * which sees the note in their place (nothing, without one); the transcript keeps them (R21). Logged
 * as a compaction (strategy and reason 'reset') with `principal`, on the view's latest compaction
 * (one of two that race lands first; the other is built again on it). Any harness, with or without
 * `compaction`. The note is the caller's: a session secret in it is refused, as in a prompt.
 */
export async function resetSession(
  deps: Omit<CompactSessionDeps, 'logger'>,
  note: string | undefined,
  options: { principal?: string },
): Promise<ResetDone> {
  const { harness, log } = deps
  if (note !== undefined && typeof note !== 'string')
    throw new TypeError(`session.reset(note): note must be a string (what the model sees in place of the conversation), got ${typeof note}`)
  if (options.principal !== undefined) checkPrincipal(options.principal)
  const bytes = Buffer.byteLength(note ?? '')
  if (bytes > harness.durability.maxValueBytes)
    throw new ValueTooLargeError('session.reset(note): the note', bytes, harness.durability.maxValueBytes)
  await assertNoSecrets(harness, log.sessionId, { what: 'session.reset(note): the note', encoded: note })
  await deps.checkDeployment()
  for (let attempt = 0; ; attempt++) {
    const { inputId, joined, conversation, view } = await nextView(log)
    const done = await runReset({
      harness,
      log,
      conversation,
      ...(inputId ? { inputId } : {}),
      joined,
      view,
      ...(note ? { note } : {}),
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
    })
    if (done.status === 'ok') return { entryId: done.entryId, tokens: { before: done.before, after: done.after } }
    // a compaction landed between the read and the write: build on it (a busy session's turns compact often)
    if (attempt >= MAX_STALE) throw new CompactionFailedError(log.sessionId, new Error('other compactions kept landing first'))
  }
}

const silent = pino({ level: 'silent' })
