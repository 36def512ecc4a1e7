// A durable tool that records the lock token of its own job on each run: which lane slot
// (`…:start<n>`), lane fetch or plain BullMQ worker started the job. The suites of the local lane
// (harness, startCall, laneOff, laneContract) tell the paths apart by it.
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { durableTool } from '../../src/index.js'
import { toolJobId, type RedisClient } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { queuePrefix } from '../rig.js'

/**
 * The tool `lockOf`: pushes its job's lock token to `locks`. `where` and `client` are read when the tool
 * runs, so they may name a host started after the tool was made.
 */
export function lockOfTool(
  client: () => RedisClient,
  where: () => { prefix: string; harness: string; sessionId: string },
  locks: string[],
) {
  return durableTool(
    toolDefinition({ name: 'lockOf', description: "reads its job's lock", inputSchema: z.object({}) }),
    async (_input, { toolCallId }) => {
      const { prefix, harness, sessionId } = where()
      const key = `${queuePrefix(prefix, sessionId)}:${toolQueueName(harness)}:${toolJobId(sessionId, toolCallId)}:lock`
      locks.push((await client().get(key)) ?? '')
      return { ok: true }
    },
  )
}
