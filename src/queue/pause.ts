import type { HarnessQueues } from './queues.js'

/**
 * Pauses every queue of a harness, in every shard (host.pause): BullMQ takes no new job from a paused
 * queue, so new turns and calls wait, running ones finish, and a job that becomes due (a parked call
 * waking, a turn whose batch landed) moves to the paused list, where it waits in order.
 */
export async function pauseQueues(queues: HarnessQueues): Promise<void> {
  for (let shard = 0; shard < queues.shards; shard++) {
    const { turns, tools } = queues.shard(shard)
    await Promise.all([turns.pause(), tools.pause()])
  }
}

/** Resumes every queue of a harness, in every shard (host.resume): the waiting jobs run, in order. */
export async function resumeQueues(queues: HarnessQueues): Promise<void> {
  for (let shard = 0; shard < queues.shards; shard++) {
    const { turns, tools } = queues.shard(shard)
    await Promise.all([turns.resume(), tools.resume()])
  }
}

/** Whether any queue of the harness is paused (a pause cut short by a crash counts). */
export async function queuesPaused(queues: HarnessQueues): Promise<boolean> {
  for (let shard = 0; shard < queues.shards; shard++) {
    const { turns, tools } = queues.shard(shard)
    if ((await turns.isPaused()) || (await tools.isPaused())) return true
  }
  return false
}
