import { z } from 'zod'

/**
 * `harness.fork`: this session is a fork (host.fork; docs/compaction.md, "Fork"). The entries before
 * it are copies of `from`'s, under their stream ids there, of its turns up to `before` (not included)
 * or `through` (included): `turns` of them; `entryId`: the source's last entry copied.
 */
export const forkRecord = z.object({
  from: z.string(),
  before: z.string().optional(),
  through: z.string().optional(),
  entryId: z.string().optional(),
  turns: z.number().int().nonnegative(),
  principal: z.string().optional(),
  at: z.number(),
})
