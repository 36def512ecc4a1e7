import { openValue, sealValue, type CodecPlace } from '../codec/index.js'
import { stepRecordJson } from './stepRecord.js'
import type { StepRetryState } from './callState.js'
import { hasType, type LogRecord } from './records.js'
import { startsWithNul, stepValuePlace } from './sealedRecords.js'
import { decodeValue, encodeValue } from './stepValues.js'
import { encodeRecord, type LogStream } from './stream.js'
import type { Fence } from './callState.js'
import type { Question } from './inputs.js'
import { openMember } from './formats.js'
import { stepField } from './keys.js'
import type { ScriptInput, scripts } from './commands/index.js'

/** Where a step's retry state keeps its last failure's message: the place of its record's (sealed once for both). */
const retryPlace = (sessionId: string): CodecPlace => ({ sessionId, type: 'harness.tool.step.retry', field: 'error.message' })

/**
 * A step's record and steps hash value as stored under the codec (docs/encryption.md): a step's
 * value and an event's payload are sealed once, in the record, and the hash holds that same value.
 * `record` as JSON text is a step.do's (stepRecordJson): made again from its parts.
 */
export async function sealedStep(stream: LogStream, toolCallId: string, name: string, value: unknown, record: LogRecord | string) {
  if (typeof record === 'string') {
    // a step.do's record from its checked parts, its value sealed (the hot path: no schema walk)
    const stored = await sealValue(stream.codec, value, stepValuePlace(stream.sessionId))
    return {
      value: encodeValue(stored),
      record: stepRecordJson(toolCallId, name, stored === undefined ? undefined : JSON.stringify(stored), stream.compact),
    }
  }
  const sealed = await stream.sealed(record)
  const stored = hasType(sealed, 'harness.tool.step') ? sealed.value : hasType(sealed, 'harness.tool.event') ? sealed.payload : value
  return { value: encodeValue(stored), record: stream.encode(sealed) }
}

/** A value of the steps hash as it was written (a sealed one opened at its record's place). */
export async function openStoredStep(stream: LogStream, stored: string): Promise<unknown> {
  const value = decodeValue(stored)
  return startsWithNul(value) ? openValue(stream.codec, value, stepValuePlace(stream.sessionId)) : value
}

/** A step's retry state as it was written: its message is its record's sealed one (CallLedger.saveStepRetry). */
export async function openRetryState(stream: LogStream, state: StepRetryState): Promise<StepRetryState> {
  if (!startsWithNul(state.m)) return state
  return { ...state, m: String(await openValue(stream.codec, state.m, retryPlace(stream.sessionId))) }
}

/** askQuestion.lua's arguments: the question beside its record holds the record's sealed message (docs/encryption.md). */
export async function askArgs(
  stream: LogStream,
  fence: Fence,
  name: string,
  question: Question,
  stepValue: string,
): Promise<ScriptInput<typeof scripts.askQuestion>['args']> {
  const asked = await stream.sealed({ type: 'harness.tool.ask', ...question })
  return {
    toolCallId: fence.toolCallId,
    epoch: fence.epoch,
    stepField: stepField(fence.toolCallId, name),
    stepValue,
    record: encodeRecord(asked),
    questionId: question.questionId,
    question: JSON.stringify({ ...question, message: asked.message }),
    now: Date.now(),
    openMember: openMember(stream.sessionId, question.questionId),
  }
}
