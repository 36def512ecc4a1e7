// `npm start`: the checkout tool of durable-tools.md, run end to end on Redis. A first worker process
// is killed (SIGKILL) between `charge` and `sendInvoice`; a second worker finishes the call; the
// session log is printed as a timeline, and the billing ledger proves the card was charged once.
import { randomBytes } from 'node:crypto'
import { pino } from 'pino'
import { createHarnessHost } from '../src/index.js'
import { spawnWorker } from '../src/testing/index.js'
import { assistant, billing } from './demo-harness.js'
import { resolveRedis } from './lib/redis.js'
import { formatTimeline } from './lib/timeline.js'

const say = (line: string) => process.stdout.write(`${line}\n`)
const redis = await resolveRedis(say)
const prefix = `demo-${randomBytes(3).toString('hex')}`
process.env.REDIS_URL = redis.url
process.env.DH_PREFIX = prefix
const workerEnv = { LOG_LEVEL: 'info', DEMO_PAUSE_MS: '60000' }
const host = createHarnessHost({ redis: redis.url, harnesses: [assistant], prefix, logger: pino({ level: 'warn' }) })

try {
  say(`[1/5] Redis ${redis.url}, key prefix ${prefix}. Starting worker A...`)
  const workerA = await spawnWorker({ redisUrl: redis.url, prefix, module: 'scripts/demo-harness.ts', env: workerEnv })
  const session = host.open(assistant, { sessionId: `order-42-${randomBytes(2).toString('hex')}` })
  const { inputId } = await session.prompt('Charge order 42', { inputId: 'charge-order-42' })
  say(`[2/5] Prompted "Charge order 42" in session ${session.sessionId}; waiting for the charge step...`)
  for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) {
    if (record.type === 'harness.tool.step') break
  }
  await workerA.kill('SIGKILL')
  say(`[3/5] The card is charged and the invoice not sent: worker A (pid ${workerA.proc.pid}) killed with SIGKILL.`)
  const workerB = await spawnWorker({
    redisUrl: redis.url,
    prefix,
    module: 'scripts/demo-harness.ts',
    env: { ...workerEnv, DEMO_PAUSE_MS: '0' },
  })
  say(`[4/5] Worker B (pid ${workerB.proc.pid}) started; it picks the cut call up after the lock expires (~3 s)...`)
  const settled = await session.settled(inputId, { timeoutMs: 60_000 })
  await workerB.kill('SIGTERM')
  say(`[5/5] Turn ${settled.outcome}: ${settled.text ?? settled.error?.message}\n`)
  say('Session log:')
  for (const line of formatTimeline(await session.log.read())) say(`  ${line}`)
  const counts = await billing.counts()
  const charges = Number(counts['charge:42'] ?? 0)
  const invoices = Number(counts['invoice:ch_42'] ?? 0)
  say(
    `\nBilling ledger: order 42 charged ${charges} time(s) (idempotency key ${counts['charge-key:42']}), invoice sent ${invoices} time(s).`,
  )
  say(
    charges === 1 && invoices === 1
      ? 'The card was charged once: the crash did not charge it twice.'
      : 'FAILED: the card was not charged exactly once.',
  )
  process.exitCode = charges === 1 && invoices === 1 && settled.outcome === 'completed' ? 0 : 1
} finally {
  await host.close()
  billing.close()
  await redis.stop()
}
