import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { HonoAdapter } from '@bull-board/hono'
import { serveStatic } from '@hono/node-server/serve-static'
import type { Hono } from 'hono'
import type { HarnessHost } from '../harness/host.js'

/** bull-board's queue views of every queue of the host (host.queues(): each queue of each shard), at `<base>/queues`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any app env: bull-board routes read none of it
export function mountQueueViews(app: Hono<any>, host: HarnessHost, base: string): void {
  const adapter = new HonoAdapter(serveStatic)
  adapter.setBasePath(`${base}/queues`)
  createBullBoard({
    // one queue name per shard: bull-board tells them apart by the shard prefix
    queues: host.queues().map(
      (q) =>
        new BullMQAdapter(q.queue, {
          readOnlyMode: false,
          prefix: `shard${q.shard}.`,
          description: `${q.kind} of ${q.harness} (shard ${q.shard})`,
        }),
    ),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'durable-harness queues' } },
  })
  app.route('/queues', adapter.registerPlugin())
}
