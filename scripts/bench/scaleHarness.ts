// Harness module of the scaling bench (scale.ts), loaded by its worker processes and by the bench
// process: `work` is a durable tool call with one step.
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

const work = durableTool(
  toolDefinition({ name: 'work', description: 'One step', inputSchema: z.object({ i: z.number() }) }),
  async ({ i }, { step }) => ({ done: await step.do('one', async () => i) }),
)

export const scaleHarness = defineHarness({ name: 'bench-scale', adapter: scriptedModel([]), tools: [work] })
