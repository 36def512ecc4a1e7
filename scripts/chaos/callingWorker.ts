// A chaos worker process that is also a runTool caller (`npm run chaos`): it runs the chaos harness's
// workers as workers/worker.ts does, and calls `checkout` one call after another under generated ids
// in a session of its own (`self-<pid>`), so those calls start in their request's write on this
// process's lane (startCall.lua) and a SIGKILL of it cuts calls it both asked for and ran. It stops
// calling once the chaos process sets `<prefix>:chaos:stop-calling`; the chaos process then waits
// for every requested call to land (taken over by the other workers) and checks them as it checks
// the turns' calls (index.ts).
import { createRedisClient } from '../../src/index.js'
import { startProcess } from '../../src/cli/processEnv.js'
import { chaos } from './harness.js'
import { callOverMcp, serveMcp } from './mcpCaller.js'

const prefix = process.env.DH_PREFIX ?? 'dh'
const stopKey = `${prefix}:chaos:stop-calling`

await startProcess('worker', process.argv.slice(2), (host, logger) => {
  const workers = host.startWorkers({ concurrency: Number(process.env.CONCURRENCY ?? 10), sweepEveryMs: 0 })
  const redis = createRedisClient(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null })
  const session = host.open(chaos, { sessionId: `self-${process.pid}` })
  const stopped = async () => (await redis.exists(stopKey).catch(() => 0)) !== 0
  // --mcp: this worker serves MCP too, and its calls are MCP tasks on any calling worker's server (mcpCaller.ts)
  if (process.env.CHAOS_MCP) {
    void (async () => {
      await serveMcp(host, redis, prefix)
      for (let n = 0; !(await stopped()); n++)
        await callOverMcp(redis, prefix, `self-${process.pid}`, `mcp-${process.pid}-${n}`, logger, stopped)
    })()
    return { close: async (options) => (redis.disconnect(), workers.close(options)) }
  }
  void (async () => {
    for (let n = 0; (await redis.exists(stopKey).catch(() => 0)) === 0; n++) {
      // a call cut by a Redis restart (its reply lost) lands all the same: another worker takes it over
      await session.runTool({ name: 'checkout', input: { orderId: `self-${process.pid}-${n}` } }).catch((err: unknown) => {
        logger.warn({ err }, 'chaos: a self call failed here; its call, if requested, lands elsewhere')
      })
    }
  })()
  return {
    close: async (options) => {
      redis.disconnect()
      return workers.close(options)
    },
  }
})
