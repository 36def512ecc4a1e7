import * as crypto from 'node:crypto'
import { isSafeId } from './keys.js'

/**
 * Stored tool call ids. A model controls its call ids: some number them `call_0`, `call_1` in every
 * response, some may send any character. The id a call is stored under (keys, hash fields, job ids,
 * pub/sub messages, idempotency keys) is therefore ours: the model's id when it is safe and not used
 * yet in the session, else a form scoped by the response that cannot collide. The model keeps seeing
 * its own id (`modelToolCallId` on the logged call).
 */

// one-shot crypto.hash (Node 20.12+) is about 3x cheaper than a Hash object: two fingerprints a runTool call
const sha =
  typeof crypto.hash === 'function'
    ? (text: string, chars: number) => crypto.hash('sha256', text, 'hex').slice(0, chars)
    : (text: string, chars: number) => crypto.createHash('sha256').update(text).digest('hex').slice(0, chars)

/** What a sealed prompt's text is compared by (addInput.lua `textCheck`): its ciphertext differs each time it is sealed. */
export function textFingerprint(text: string): string {
  return sha(text, 32)
}

/**
 * The model's id as is when it is safe in keys and messages, else a hash of it (no control characters,
 * no `|`). A `.` is hashed too: `<parent>.<name>` is a fan-out child's id (fanout/names.ts), which a
 * model's id must never take before the child.
 */
export function baseCallId(modelId: string): string {
  return isSafeId(modelId) && !modelId.includes('.') && modelId.length <= 100 ? modelId : `h-${sha(modelId, 24)}`
}

/**
 * The id of call `index` of the turn's response number `response`, when its base is taken. `~` never
 * occurs in a base, so a scoped id cannot equal any base, and (inputId, response, index) is unique in
 * the session: one response per number is ever logged (logModelResponse checks the count).
 */
export function scopedCallId(base: string, inputId: string, response: number, index: number): string {
  return `${base}~${sha(`${inputId}\0${response}\0${index}`, 12)}`
}

/**
 * What a call id was used for: its tool and input, and for a call of a turn the turn and the size of
 * an input too large to keep. runTool refuses the same id for another call; a tool job begins only
 * when its data has the fingerprint its logged call wrote (beginCall.lua).
 */
export function callFingerprint(
  name: string,
  input: unknown,
  turn: { inputId?: string | undefined; inputTooLarge?: number | undefined } = {},
): string {
  const inputId = turn.inputId === undefined ? '' : `\0i:${turn.inputId}`
  const tooLarge = turn.inputTooLarge === undefined ? '' : `\0t:${turn.inputTooLarge}`
  return sha(`${name}\0${JSON.stringify(input ?? null)}${inputId}${tooLarge}`, 20)
}
