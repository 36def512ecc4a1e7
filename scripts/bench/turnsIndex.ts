// host.turns at scale (issue 27): the first page (50) of failed turns, and of the turns that called a
// tool, at 1,000 sessions and at 100,000 sessions, in the same run and on the same Redis, queries
// interleaved so load hits both alike. The sessions are made by the real scripts (addInput,
// logModelResponse, settleInput: the ones that write the turns and tool indexes), one turn each, one in
// ten failed, one in ten (another one) calling `refund`, the others `lookup`; no workers run (the query
// reads only the indexes and the inputs of the turns it returns). Target: the large one within 1.2x of
// the small one.
import { Redis } from 'ioredis'
import { createHarnessHost, defineHarness } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pool, silentLogger, summarize, type Progress, type Summary } from './lib.js'

const harness = defineHarness({ name: 'bench-turns', adapter: scriptedModel([{ text: 'done' }]) })

export interface TurnsIndexFigure {
  small: { sessions: number; failed: number; page: Summary; toolPage: Summary }
  large: { sessions: number; failed: number; page: Summary; toolPage: Summary }
  /** p50 of the large one / p50 of the small one: failed turns, and turns that called `refund`. */
  ratio: number
  toolRatio: number
  pageSize: number
  queries: number
}

/** Sessions of one turn each, through the scripts a prompt, a model response and a settle run; every tenth one failed. */
async function populate(redisUrl: string, prefix: string, sessions: number, progress: Progress): Promise<number> {
  const host = createHarnessHost({ redis: redisUrl, harnesses: [harness], prefix, logger: silentLogger })
  const client = new Redis(redisUrl)
  let failed = 0
  try {
    await host.ready()
    await pool(sessions, 64, async (i) => {
      const log = new SessionLog(client, prefix, `s${i}`)
      await log.inputs.addInput('in-1', `order ${i}`, harness.name, { metadata: { order: String(i) } })
      const tool = i % 10 === 5 ? 'refund' : 'lookup'
      await log.inputs.logModelResponse('in-1', { toolCalls: [{ toolCallId: 'c1', name: tool, input: {} }] }, 0, harness.name)
      const outcome = i % 10 === 0 ? 'failed' : 'completed'
      if (outcome === 'failed') failed++
      await log.inputs.settle({ type: 'harness.input.settled', inputId: 'in-1', outcome }, harness.name)
      if (i > 0 && i % 20_000 === 0) progress(`[turns-index] ${prefix}: ${i.toLocaleString('en-US')} sessions`)
    })
  } finally {
    client.disconnect()
    await host.close()
  }
  return failed
}

export async function measureTurnsIndex(
  redisUrl: string,
  { quick, progress }: { quick: boolean; progress: Progress },
): Promise<TurnsIndexFigure> {
  const sizes = { small: 1_000, large: quick ? 20_000 : 100_000 }
  const queries = quick ? 100 : 400
  const pageSize = 50
  const small = benchPrefix('turns-s')
  const large = benchPrefix('turns-l')
  const hosts = [small, large].map((prefix) => createHarnessHost({ redis: redisUrl, harnesses: [harness], prefix, logger: silentLogger }))
  try {
    progress(`[turns-index] ${sizes.small.toLocaleString('en-US')} and ${sizes.large.toLocaleString('en-US')} sessions of one turn`)
    const failedSmall = await populate(redisUrl, small, sizes.small, progress)
    const failedLarge = await populate(redisUrl, large, sizes.large, progress)
    const filters = { failed: { status: 'failed' }, tool: { tool: 'refund' } } as const
    const samples = { failed: [[], []] as [number[], number[]], tool: [[], []] as [number[], number[]] }
    const query = async (which: 0 | 1, kind: keyof typeof filters) => {
      const t0 = performance.now()
      const page = await hosts[which]!.turns({ ...filters[kind], limit: pageSize })
      samples[kind][which].push(performance.now() - t0)
      if (page.items.length !== pageSize) throw new Error(`turns-index bench: a ${kind} page of ${page.items.length}, not ${pageSize}`)
    }
    const kinds = ['failed', 'tool'] as const
    for (let i = 0; i < 20; i++) for (const kind of kinds) await Promise.all([query(0, kind), query(1, kind)]) // warm-up: connections, scripts
    for (const kind of kinds) samples[kind][0].length = samples[kind][1].length = 0
    // interleaved, alternating which goes first, so a burst of load on the machine hits both
    for (let i = 0; i < queries; i++) {
      const order: Array<0 | 1> = i % 2 === 0 ? [0, 1] : [1, 0]
      for (const kind of kinds) for (const which of order) await query(which, kind)
    }
    const [s, l] = [summarize(samples.failed[0]), summarize(samples.failed[1])]
    const [st, lt] = [summarize(samples.tool[0]), summarize(samples.tool[1])]
    return {
      small: { sessions: sizes.small, failed: failedSmall, page: s, toolPage: st },
      large: { sessions: sizes.large, failed: failedLarge, page: l, toolPage: lt },
      ratio: l.p50 / s.p50,
      toolRatio: lt.p50 / st.p50,
      pageSize,
      queries,
    }
  } finally {
    await Promise.all(hosts.map((h) => h.close()))
    await deletePrefix(redisUrl, small)
    await deletePrefix(redisUrl, large)
  }
}
