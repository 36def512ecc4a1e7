// Measurement 2j: runTool's p50 over a link with a one-way delay (a TCP proxy, delayProxy.mjs), against
// raw BullMQ's round trip over the same link, one at a time, in alternating rounds. On this machine's
// loopback a round trip is CPU (row 2a); over a link it is latency, so the ratio is about the round
// trips each pays: raw's add, wake-up and move, completion; ours the request with its add, the
// wake-up and move, one per step (R1: a step is stored before step.do resolves), and the landing.
import { spawn, type ChildProcess } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { createHarnessHost, defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pingSamples, silentLogger, stderrProgress, summarize, timeEach } from './lib.js'
import type { Progress, Summary } from './lib.js'
import { startRawBullmq } from './bullmq.js'
import { three } from './toolCalls.js'

const harness = defineHarness({ name: 'bench-latency', adapter: scriptedModel([{ text: 'x' }]), tools: [three] })

export interface LatencyResult {
  /** One-way delay the proxy adds, ms. */
  delayMs: number
  ping: Summary
  raw: Summary
  ours: Summary
}

/** Starts delayProxy.mjs in front of `redisUrl`'s port; resolves with the proxy's URL and the process. */
async function startProxy(redisUrl: string, delayMs: number): Promise<{ url: string; proc: ChildProcess }> {
  const target = new URL(redisUrl)
  const script = join(dirname(fileURLToPath(import.meta.url)), 'delayProxy.mjs')
  const proc = spawn(process.execPath, [script, target.port || '6379', String(delayMs)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((resolve, reject) => {
    let out = ''
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      const m = /PROXY (\d+)/.exec(out)
      if (m) resolve(m[1]!)
    })
    proc.once('exit', (code) => reject(new Error(`delay proxy exited (${code})`)))
  })
  const url = new URL(redisUrl)
  url.hostname = '127.0.0.1'
  url.port = port
  return { url: url.toString(), proc }
}

export async function measureLatency(
  redisUrl: string,
  options: { quick?: boolean; delayMs?: number; progress?: Progress } = {},
): Promise<LatencyResult> {
  const progress = options.progress ?? stderrProgress
  const delayMs = options.delayMs ?? 1
  const { url, proc } = await startProxy(redisUrl, delayMs)
  const prefix = benchPrefix('latency')
  const host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 20, sweepEveryMs: 0 })
  const raw = await startRawBullmq(url, 20, progress)
  const ping = new Redis(url, { maxRetriesPerRequest: 1 })
  try {
    const call = () => host.open(harness, { sessionId: 'latency' }).runTool({ name: 'three', input: {} })
    progress(`[latency] warm-up over a link of ${delayMs} ms each way`)
    for (let i = 0; i < 30; i++) await call()
    const rounds = options.quick ? 2 : 6
    const n = options.quick ? 10 : 25
    const rawSamples: number[] = []
    const ourSamples: number[] = []
    const time = (into: number[], fn: () => Promise<unknown>) => timeEach(into, n, fn)
    for (let r = 0; r < rounds; r++) {
      progress(`[latency] round ${r + 1}/${rounds}: ${n} raw BullMQ round trips and ${n} runTool calls, one at a time`)
      if (r % 2 === 0) await time(rawSamples, () => raw.roundTrip()).then(() => time(ourSamples, call))
      else await time(ourSamples, call).then(() => time(rawSamples, () => raw.roundTrip()))
    }
    return { delayMs, ping: summarize(await pingSamples(ping, 20)), raw: summarize(rawSamples), ours: summarize(ourSamples) }
  } finally {
    ping.disconnect()
    await workers.close()
    await raw.close()
    await host.close()
    await deletePrefix(redisUrl, prefix)
    proc.kill()
  }
}
