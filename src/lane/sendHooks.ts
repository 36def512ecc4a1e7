import { isCluster, type RedisClient } from '../log/index.js'
import type { Redis } from 'ioredis'

/**
 * Runs `send` with the connection's socket corked until the current microtasks have run: the command
 * it sends and the ones sent right behind it in the same turn (BullMQ's job add behind runTool's
 * request) leave in one socket write instead of one each. Only that request is corked: a landing's
 * or a log script's write waited for the end of the tick, which cost more than the write it saved
 * (docs/decisions/log-writes-uncorked.md). The order
 * is unchanged, so Redis runs them as sent. A Cluster, a connection not ready, or one that ioredis
 * auto-pipelines (it batches a tick's commands itself) sends as usual.
 */
export function sendCorked<T>(client: RedisClient, send: () => T): T {
  const socket = isCluster(client) || client.status !== 'ready' || client.options.enableAutoPipelining ? undefined : client.stream
  if (!socket || typeof socket.cork !== 'function') return send()
  socket.cork()
  try {
    return send()
  } finally {
    process.nextTick(() => socket.uncork())
  }
}

/** Per connection: what runs right after a command with a given first key is written (afterSendTo). */
const sendWatches = new WeakMap<Redis, Map<string, () => void>>()

/**
 * Runs `then` right after the next script with first key `key` is written on `client` in this tick
 * (BullMQ's job add behind runTool's request: a local lane's fetch then follows it in the same socket
 * write, in order). Dropped at the tick's end if none was. A Cluster never watches (no order across nodes).
 */
export function afterSendTo(client: RedisClient, key: string, then: () => void): void {
  if (isCluster(client)) return
  let watches = sendWatches.get(client)
  if (!watches) {
    const watching = new Map<string, () => void>()
    watches = watching
    sendWatches.set(client, watching)
    const write = client.sendCommand.bind(client)
    client.sendCommand = (command, stream) => {
      const sent = write(command, stream)
      const first = watching.size > 0 && (command.name === 'evalsha' || command.name === 'eval') ? command.args[2] : undefined
      const due = typeof first === 'string' && watching.get(first)
      if (due) {
        watching.delete(first)
        due()
      }
      return sent
    }
  }
  const watched = watches
  watched.set(key, then)
  queueMicrotask(() => process.nextTick(() => watched.get(key) === then && watched.delete(key)))
}
