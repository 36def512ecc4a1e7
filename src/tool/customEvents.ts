import type { Harness } from '../core/index.js'
import type { SessionLog } from '../log/index.js'
import { encodeChecked, toJsonCopy } from './json.js'
import { SecretStore } from './secrets.js'

/** The session's secrets from the harness resolver (user code: it runs in the worker, or the answering process). */
export async function resolveSecrets(harness: Harness, sessionId: string): Promise<SecretStore> {
  return new SecretStore(harness.secrets ? await harness.secrets({ sessionId, harness: harness.name }) : {})
}

/** What a failed resolver threw, by its name only: its message may hold the very secrets it failed to return. */
export function resolverErrorName(error: unknown): string {
  return typeof error === 'object' && error !== null && 'name' in error && typeof error.name === 'string' ? error.name : 'error'
}

/**
 * `emitCustomEvent(name, value)` of a tool or of a middleware hook: to every follower of the session as
 * a CUSTOM event, through the live stream (best effort, not kept in the log). The value must be JSON
 * within the size limit; session secrets in it are redacted, since Redis never holds one.
 * `source.toolCallId`: the call that emits (absent: a model-call hook of the turn `source.inputId`).
 */
export function customEvents(
  log: SessionLog,
  source: { label: string; toolCallId?: string; inputId?: string },
  secrets: SecretStore,
  maxValueBytes: number,
) {
  return (name: string, value: Record<string, unknown>) => {
    const what = `Custom event "${name}" of ${source.label}`
    const copy = toJsonCopy(value, what)
    encodeChecked(copy, what, maxValueBytes)
    const from = source.toolCallId !== undefined ? { toolCallId: source.toolCallId } : { inputId: source.inputId ?? '' }
    void log.stream.appendLive({ k: 'custom', ...from, name: String(name), value: secrets.redact(copy) }).catch(() => {})
  }
}
