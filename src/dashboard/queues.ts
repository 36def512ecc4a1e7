import { AsyncLocalStorage } from 'node:async_hooks'
import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { HonoAdapter } from '@bull-board/hono'
import { serveStatic } from '@hono/node-server/serve-static'
import type { Job } from 'bullmq'
import type { Context, Hono, Next } from 'hono'
import type { HarnessHost } from '../harness/host.js'
import { sessionOfJobId } from '../log/index.js'

/** Who asks, for the queue views: set around each of their requests, read by the adapters. */
interface QueueScope {
  /** canAccess for the asker */
  access(sessionId: string): Promise<boolean>
  operator: boolean
}

const scope = new AsyncLocalStorage<QueueScope>()

/**
 * May the asker read this job? Only a job that names a session (in its id, and in its data if the
 * data has one) and only when `canAccess` allows every session it names; a job of no session
 * (not one the harness made) only for an operator. Outside a request's scope: no one.
 */
async function mayRead(job: Job | undefined | null): Promise<boolean> {
  const asker = scope.getStore()
  if (!job || !asker) return false
  const named = [sessionOfJobId(job.id)]
  const data: unknown = job.data
  if (typeof data === 'object' && data !== null && 'sessionId' in data) named.push(String(data.sessionId))
  if (named[0] === undefined) return asker.operator
  for (const sessionId of named) if (!(await asker.access(sessionId!))) return false
  return true
}

/** bull-board's BullMQ adapter, showing the asker only the jobs `mayRead` allows (a job refused is "not found"). */
class SessionScopedAdapter extends BullMQAdapter {
  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id)
    return (await mayRead(job)) ? job : undefined
  }

  override async getJobs(...args: Parameters<BullMQAdapter['getJobs']>): Promise<Job[]> {
    const jobs = await super.getJobs(...args)
    const ok = await Promise.all(jobs.map(mayRead))
    return jobs.filter((_, n) => ok[n])
  }

  override async getJobLogs(id: string): Promise<string[]> {
    return (await this.getJob(id)) ? super.getJobLogs(id) : []
  }

  // a scheduler's job template names no session of ours
  override async getJobSchedulers(): ReturnType<BullMQAdapter['getJobSchedulers']> {
    return scope.getStore()?.operator ? super.getJobSchedulers() : []
  }
}

/**
 * The queue actions an operator (`canOperate`) may take, as bull-board routes under `/queues`: retry,
 * promote, clean (remove), empty, pause and resume. Every other write (adding a job, editing its data,
 * its delay or priority, obliterating, schedulers, rate limits, concurrency) is refused for everyone.
 */
const OPERATOR_ROUTES: Array<['PUT', string]> = [
  ['PUT', '/api/queues/pause'],
  ['PUT', '/api/queues/resume'],
  ['PUT', '/api/queues/:queueName/retry/:queueStatus'],
  ['PUT', '/api/queues/:queueName/promote'],
  ['PUT', '/api/queues/:queueName/clean/:queueStatus'],
  ['PUT', '/api/queues/:queueName/pause'],
  ['PUT', '/api/queues/:queueName/resume'],
  ['PUT', '/api/queues/:queueName/empty'],
  ['PUT', '/api/queues/:queueName/:jobId/retry'],
  ['PUT', '/api/queues/:queueName/:jobId/clean'],
  ['PUT', '/api/queues/:queueName/:jobId/promote'],
]

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any app env: these routes read only what they set
type AnyApp = Hono<any>
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyContext = Context<any>

/**
 * bull-board's queue views of every queue of the host (host.queues(): each queue of each shard), at
 * `<base>/queues`, under the asker's scope: `scopeOf` says what the asker may do (canAccess, operator).
 * Reads show only jobs of sessions the asker may access; writes are refused (403) but the operator
 * actions above, for an operator. The app's own middleware has authorized the request already.
 */
export function mountQueueViews(
  app: AnyApp,
  host: HarnessHost,
  base: string,
  scopeOf: (c: AnyContext) => Promise<QueueScope>,
  operators: boolean,
): void {
  const adapter = new HonoAdapter(serveStatic)
  adapter.setBasePath(`${base}/queues`)
  createBullBoard({
    // one queue name per shard: bull-board tells them apart by the shard prefix
    queues: host.queues().map(
      (q) =>
        new SessionScopedAdapter(q.queue, {
          // no operator role configured: bull-board hides its action buttons too
          readOnlyMode: !operators,
          prefix: `shard${q.shard}.`,
          description: `${q.kind} of ${q.harness} (shard ${q.shard})`,
        }),
    ),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'durable-harness queues' } },
  })
  const within = async (c: AnyContext, next: Next) => scope.run(await scopeOf(c), next)
  app.use('/queues', within)
  app.use('/queues/*', within)
  for (const [method, route] of OPERATOR_ROUTES)
    app.on(method, `/queues${route}`, async (c, next) => {
      if (!scope.getStore()?.operator)
        return c.json(
          { error: 'Forbidden: only an operator (canOperate) may retry, promote, clean, empty or pause jobs.', code: 'forbidden' },
          403,
        )
      c.set('operation', true)
      await next()
    })
  const writes = async (c: AnyContext, next: Next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD' || c.get('operation')) return next()
    return c.json(
      { error: 'Forbidden: the queue views do not add, edit or remove jobs; work enters through prompt and runTool.', code: 'forbidden' },
      403,
    )
  }
  app.use('/queues', writes)
  app.use('/queues/*', writes)
  app.route('/queues', adapter.registerPlugin())
}
