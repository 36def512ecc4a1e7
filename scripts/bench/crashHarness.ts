// Harness module of the crash-to-rerun bench, loaded by worker processes (workers/worker.ts) and by
// the bench process. `hang` stores a step, then waits `hangMs` before its second step: the window in
// which the bench SIGKILLs the worker. Lock settings come from env (BENCH_LOCK_MS, BENCH_STALLED_MS);
// unset, the harness has the default durability.
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

const hang = durableTool(
  toolDefinition({ name: 'hang', description: 'A step, a long wait, a step', inputSchema: z.object({ hangMs: z.number() }) }),
  async ({ hangMs }, { step }) => {
    await step.do('before', async () => Date.now())
    await new Promise((resolve) => setTimeout(resolve, hangMs))
    await step.do('after', async () => Date.now())
    return { ok: true }
  },
)

const { BENCH_LOCK_MS: lockMs, BENCH_STALLED_MS: stalledMs } = process.env

export const crashHarness = defineHarness({
  name: 'bench-crash',
  adapter: scriptedModel([]),
  tools: [hang],
  durability: { ...(lockMs ? { lockMs: Number(lockMs) } : {}), ...(stalledMs ? { stalledMs: Number(stalledMs) } : {}) },
})
