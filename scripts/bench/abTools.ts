// The durable tools of `--against` (againstSide.ts and againstInterleaved.ts): three trivial steps for
// the runTool rows, one for the drains, made with the side's own `durableTool` so each side's library
// runs its own steps; and the drains' enqueue.
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import type * as Index from '../../src/index.js'
import { pool } from './lib.js'

/**
 * Imports a module of the side's library under `root` (its own node_modules resolve its imports):
 * with `js`, the side's compiled JavaScript (compileSide.ts), else its TypeScript source under tsx.
 */
export function sideImporter(root: string, js: boolean) {
  return (path: string) =>
    import(pathToFileURL(join(root, js ? path.replace(/\.ts$/, '.js') : path)).href) as Promise<Record<string, unknown>>
}

export function threeStepTool(durableTool: typeof Index.durableTool) {
  return durableTool(
    toolDefinition({ name: 'three', description: 'Three trivial steps', inputSchema: z.object({}) }),
    async (_input, ctx) => {
      await ctx.step.do('a', async () => 1)
      await ctx.step.do('b', async () => 2)
      await ctx.step.do('c', async () => 3)
      return { ok: true }
    },
  )
}

export function oneStepTool(durableTool: typeof Index.durableTool) {
  return durableTool(toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }), async (_input, ctx) => {
    await ctx.step.do('a', async () => 1)
    return { ok: true }
  })
}

/**
 * Enqueues `n` calls of `one` (10 a session) for a drain: a zero wait returns at once
 * (WaitTimeoutError) and the calls go on durably.
 */
export function enqueueOneStep(
  lib: Pick<typeof Index, 'WaitTimeoutError'>,
  host: Index.HarnessHost,
  harness: Index.Harness,
  tag: string,
  n: number,
): Promise<number> {
  return pool(n, 200, (i) =>
    host
      .open(harness, { sessionId: `${tag}-${Math.floor(i / 10)}` })
      .runTool({ name: 'one', input: {} }, { timeoutMs: 0 })
      .catch((e: unknown) => {
        if (!(e instanceof lib.WaitTimeoutError)) throw e
      }),
  )
}
