import { SecretsUnavailableError } from '../errors/index.js'
import type { Harness } from '../core/index.js'
import { resolveSecrets, resolverErrorName } from '../tool/index.js'

/** A value a caller hands us to log: what it is (for the error) and its JSON text. */
export interface CallerValue {
  what: string
  encoded: string | undefined
}

const HINT = 'Pass what names it instead (tools read session secrets with ctx.secrets.get(name)).'

/**
 * R6 for what a caller logs (a prompt's text and context, a runTool input, an answer): Redis never
 * holds a session secret, so a value holding one is refused with SecretInValueError before anything
 * is written. A failing resolver refuses too (SecretsUnavailableError): unchecked, nothing is logged.
 * Without a resolver there is no secret to find: undefined, no promise to wait for (runTool's every call).
 */
export function assertNoSecrets(harness: Harness, sessionId: string, ...values: CallerValue[]): Promise<void> | undefined {
  return harness.secrets ? scan(harness, sessionId, values) : undefined
}

async function scan(harness: Harness, sessionId: string, values: CallerValue[]): Promise<void> {
  const secrets = await resolveSecrets(harness, sessionId).catch((error: unknown) => {
    throw new SecretsUnavailableError(values[0]?.what ?? 'The value', resolverErrorName(error))
  })
  for (const { what, encoded } of values) secrets.assertAbsent(encoded, what, HINT)
}
