import { Job, Queue } from 'bullmq'
import { shardOf, toolJobId, type RedisClient } from '../log/index.js'
import { bullPrefix, toolQueueName } from './names.js'

/**
 * Wakes a parked call of a harness known only by its name (a machine event sent from a process that
 * does not run the waiting call's harness: a webhook server, the CLI): its delayed job is promoted
 * on a queue handle made for it. A no-op when the job is not delayed or gone.
 */
export async function wakeCallByName(
  connection: RedisClient,
  prefix: string,
  shards: number,
  harness: string,
  sessionId: string,
  toolCallId: string,
): Promise<void> {
  const queue = new Queue(toolQueueName(harness), { connection, prefix: bullPrefix(prefix, shardOf(sessionId, shards), shards) })
  queue.on('error', () => {})
  try {
    await (await Job.fromId(queue, toolJobId(sessionId, toolCallId)))?.promote().catch(() => {})
  } finally {
    await queue.close()
  }
}
