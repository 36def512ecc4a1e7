// Encryption at rest (issue 56, docs/encryption.md), row 13: what the codec costs a durable call. A
// 3-step runTool call (each step's value, the input and the result sealed with aesGcmCodec, and opened
// where read), one at a time, on two hosts of the same process and Redis, with and without the codec,
// in interleaved blocks: the p50 of a call and the process's CPU a call.
import { randomBytes } from 'node:crypto'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { aesGcmCodec, createHarnessHost, defineHarness, durableTool, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, silentLogger, summarize, type Progress } from './lib.js'

const order = { sku: 'sku-1234', quantity: 3, note: 'leave it at the door, please' }
const threeSteps = durableTool(
  toolDefinition({
    name: 'order',
    description: 'Three steps',
    inputSchema: z.object({ sku: z.string(), quantity: z.number(), note: z.string() }),
  }),
  async (input, { step }) => {
    const reserved = await step.do('reserve', async () => ({ reservation: `r-${input.sku}`, quantity: input.quantity }))
    const charged = await step.do('charge', async () => ({ charge: 'ch_1234567890', amount: 4_200, currency: 'EUR' }))
    const sent = await step.do('notify', async () => ({ message: `Your order ${reserved.reservation} is on its way: ${input.note}` }))
    return { reserved, charged, sent }
  },
)
const harness = defineHarness({ name: 'bench-codec', adapter: scriptedModel([]), tools: [threeSteps] })

export interface CodecResult {
  /** p50 ms of a 3-step runTool call without and with the codec. */
  plainMs: number
  sealedMs: number
  /** The process's CPU ms a call, without and with the codec. */
  plainCpuMs: number
  sealedCpuMs: number
  calls: number
}

export async function measureCodec(url: string, options: { quick: boolean; progress: Progress }): Promise<CodecResult> {
  const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
  const sides = [
    { name: 'plain', prefix: benchPrefix('codec-plain'), times: [] as number[], cpu: 0, host: undefined as HarnessHost | undefined },
    { name: 'sealed', prefix: benchPrefix('codec-sealed'), times: [] as number[], cpu: 0, host: undefined as HarnessHost | undefined },
  ]
  for (const side of sides)
    side.host = createHarnessHost({
      redis: url,
      harnesses: [harness],
      prefix: side.prefix,
      logger: silentLogger,
      ...(side.name === 'sealed' ? { codec } : {}),
    })
  const workers = sides.map((side) => side.host!.startWorkers({ concurrency: 4, sweepEveryMs: 0 }))
  const blocks = options.quick ? 4 : 12
  const perBlock = 50
  let n = 0
  const call = (host: HarnessHost) =>
    host.open(harness, { sessionId: `codec-${++n % 200}` }).runTool({ name: 'order', input: order }, { timeoutMs: 30_000 })
  try {
    for (const side of sides) {
      await side.host!.ready()
      for (let i = 0; i < 50; i++) await call(side.host!)
    }
    for (let b = 0; b < blocks; b++) {
      // alternate which side goes first, so drift in the machine's load falls on both
      for (const side of b % 2 ? [...sides].reverse() : sides) {
        const cpu0 = process.cpuUsage()
        for (let i = 0; i < perBlock; i++) {
          const t0 = performance.now()
          await call(side.host!)
          side.times.push(performance.now() - t0)
        }
        const cpu = process.cpuUsage(cpu0)
        side.cpu += (cpu.user + cpu.system) / 1_000
      }
      options.progress(`[bench] codec block ${b + 1}/${blocks}`)
    }
    const calls = blocks * perBlock
    const [plain, sealed] = sides
    return {
      plainMs: summarize(plain!.times).p50,
      sealedMs: summarize(sealed!.times).p50,
      plainCpuMs: plain!.cpu / calls,
      sealedCpuMs: sealed!.cpu / calls,
      calls,
    }
  } finally {
    await Promise.all(workers.map((w) => w.close()))
    for (const side of sides) {
      await side.host!.close()
      await deletePrefix(url, side.prefix)
    }
  }
}
