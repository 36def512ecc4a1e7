// The durable tool of the runTool rows of `--against` (againstSide.ts and againstInterleaved.ts): three
// trivial steps, made with the side's own `durableTool` so each side's library runs its own steps.
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import type * as Index from '../../src/index.js'

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
