import type { Harness } from '../core/index.js'
import { defaultShards, SessionLog } from '../log/index.js'
import { checkSession, withStorage, type DeployReport, type StorageOptions } from './checkDeploy.js'

export { checkDeploy, type DeployReport, type StorageOptions } from './checkDeploy.js'
export type { DeployProblem, DeployProblemCode } from './checkCall.js'

/**
 * Replays one recorded session's open calls against `harness` without side effects: each call's
 * tool must exist, accept its stored input, reach every stored step and accept its stored answers.
 * `problems` is empty when the new code can take the session over.
 */
export async function replaySession(
  options: StorageOptions & { sessionId: string; harness: Harness | readonly Harness[] },
): Promise<DeployReport> {
  const harnesses = [options.harness].flat()
  return withStorage(options, (client) =>
    checkSession(
      new SessionLog(client, options.prefix ?? 'dh', options.sessionId, {
        shards: options.shards ?? defaultShards(),
        ...(options.codec ? { codec: options.codec } : {}),
      }),
      harnesses,
    ),
  )
}
