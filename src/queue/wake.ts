import { Queue } from 'bullmq'
import { shardOf, type SessionLog, type RedisClient } from '../log/index.js'
import { bullPrefix, toolQueueName } from './names.js'
import { wakeEventWait } from './parked.js'

/**
 * Wakes a call waiting for an event, of a harness known only by its name (a machine event sent from
 * a process that does not run the waiting call's harness: a webhook server, the CLI), on a queue
 * handle made for it: its delayed job is promoted, or a call parked without its job gets one
 * (queue/parked.ts). A no-op when its job is running or the call is not parked.
 */
export async function wakeCallByName(
  connection: RedisClient,
  prefix: string,
  shards: number,
  harness: string,
  log: SessionLog,
  toolCallId: string,
): Promise<void> {
  const queue = new Queue(toolQueueName(harness), { connection, prefix: bullPrefix(prefix, shardOf(log.sessionId, shards), shards) })
  queue.on('error', () => {})
  try {
    await wakeEventWait(queue, log, toolCallId)
  } finally {
    await queue.close()
  }
}
