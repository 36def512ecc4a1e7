import type { RedisClient } from './client.js'
import { runScript, scripts } from './commands/index.js'

/** The BullMQ keys of one queue that decide whether its base marker is stale. */
export interface QueueMarkerKeys {
  marker: string
  wait: string
  prioritized: string
}

/** Drops the queue's base marker while no job waits in it (dropStaleMarker.lua); true if none is set now. */
export async function dropStaleMarker(redis: RedisClient, keys: QueueMarkerKeys): Promise<boolean> {
  return (await runScript(redis, scripts.dropStaleMarker, { keys, args: {} })) === 1
}
