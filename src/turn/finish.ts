import type { ModelMessage } from '@tanstack/ai'
import { z } from 'zod'
import type { FinishMessage, Harness } from '../core/index.js'
import type { RecordOf, SessionLog } from '../log/index.js'
import type { TurnFold } from './fold.js'

const messagesSchema = z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() }))

type Failure = Omit<RecordOf<'harness.input.settled'>, 'type' | 'inputId'>

/** What a turn whose model stopped does: finish, go on (with the ephemeral messages for the next call), or fail. */
export type FinishStep = { action: 'finish' } | { action: 'continue'; ephemeral: FinishMessage[] } | { action: 'fail'; failure: Failure }

/**
 * `turn.beforeFinish`, once the model answered without tool calls: added messages are logged as a
 * cycle (`harness.turn.finish`) before the next model call, so a crash neither repeats nor loses a
 * cycle; ephemeral ones are returned, never stored. At `maxFinishCycles`, a hook that still adds
 * messages fails the turn.
 */
export async function beforeFinish(
  harness: Harness,
  log: SessionLog,
  fold: TurnFold,
  inputId: string,
  messages: ModelMessage[],
): Promise<FinishStep> {
  const hook = harness.turn.beforeFinish
  if (!hook) return { action: 'finish' }
  const added = await hook({ sessionId: log.sessionId, inputId, cycle: fold.finishCycles, messages })
  const kept = messagesSchema.safeParse(added?.messages ?? [])
  const ephemeral = messagesSchema.safeParse(added?.ephemeral ?? [])
  if (!kept.success || !ephemeral.success) {
    const issue = z.prettifyError((kept.error ?? ephemeral.error)!).replace(/\n\s*/g, ' ')
    const message = `turn.beforeFinish returned messages that are not { role: 'user' | 'assistant', content: string }: ${issue}`
    return { action: 'fail', failure: { outcome: 'failed', error: { code: 'invalid_finish_messages', message } } }
  }
  if (kept.data.length === 0 && ephemeral.data.length === 0) return { action: 'finish' }
  const { maxFinishCycles } = harness.turn
  if (fold.finishCycles >= maxFinishCycles) {
    const message = `turn.beforeFinish still added messages after ${maxFinishCycles} cycles (turn.maxFinishCycles).`
    return { action: 'fail', failure: { outcome: 'failed', error: { code: 'max_finish_cycles', message } } }
  }
  const record = {
    type: 'harness.turn.finish',
    inputId,
    cycle: fold.finishCycles + 1,
    responses: fold.responses.length,
    messages: kept.data,
  } as const
  await log.inputs.logTurnRecord(record, fold.responses.length)
  return { action: 'continue', ephemeral: ephemeral.data }
}
