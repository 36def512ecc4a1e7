import type { CompactionOptions, CompactionStrategy, ResolvedCompaction } from '../core/index.js'
import { CompactionConfigError } from '../errors/index.js'
import { summarizeOldest } from './strategies.js'

const KEYS = new Set(['maxTokens', 'contextWindow', 'countTokens', 'strategy', 'background', 'trimAfter'])

const positive = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value > 0

/**
 * `defineHarness({ compaction })` checked: every bound a positive integer, `contextWindow` ≥
 * `maxTokens`, `background.atTokens` and the strategy's `keepRecentTokens` under `maxTokens`, a
 * strategy with `compact`. Anything else is a CompactionConfigError naming the option (no harness is made).
 */
export function resolveCompaction(
  harness: string,
  options: CompactionOptions | undefined,
  /** Parses `trimAfter` to ms (the harness's duration parser), throwing on a bad one. */
  toMs: (duration: NonNullable<CompactionOptions['trimAfter']>) => number,
): ResolvedCompaction | undefined {
  if (options === undefined) return undefined
  const where = `defineHarness "${harness}" compaction`
  if (typeof options !== 'object' || options === null) throw new CompactionConfigError(where, 'must be an object { maxTokens, ... }')
  const unknown = Object.keys(options).filter((k) => !KEYS.has(k))
  if (unknown.length > 0)
    throw new CompactionConfigError(
      where,
      `unknown option ${unknown.map((k) => JSON.stringify(k)).join(', ')}; it takes ${[...KEYS].join(', ')}`,
    )
  const { maxTokens, contextWindow, countTokens = 'estimate', background } = options
  if (!positive(maxTokens)) throw new CompactionConfigError(where, `maxTokens must be a positive integer, got ${JSON.stringify(maxTokens)}`)
  if (contextWindow !== undefined && !(positive(contextWindow) && contextWindow >= maxTokens))
    throw new CompactionConfigError(
      where,
      `contextWindow must be an integer ≥ maxTokens (${maxTokens}), got ${JSON.stringify(contextWindow)}`,
    )
  if (countTokens !== 'estimate' && countTokens !== 'usage')
    throw new CompactionConfigError(where, `countTokens must be 'estimate' or 'usage', got ${JSON.stringify(countTokens)}`)
  if (
    background !== undefined &&
    !(typeof background === 'object' && background !== null && positive(background.atTokens) && background.atTokens < maxTokens)
  )
    throw new CompactionConfigError(
      where,
      `background.atTokens must be a positive integer under maxTokens (${maxTokens}), got ${JSON.stringify(background?.atTokens)}`,
    )
  const strategy: CompactionStrategy = options.strategy ?? summarizeOldest({ keepRecentTokens: Math.max(1, Math.floor(maxTokens / 2)) })
  if (typeof strategy !== 'object' || strategy === null || typeof strategy.compact !== 'function' || typeof strategy.name !== 'string')
    throw new CompactionConfigError(
      where,
      'strategy must be evictOldest(), summarizeOldest({ ... }), clearToolResults() or { name, compact(input) }',
    )
  const keep = strategy.keepRecentTokens
  if (keep !== undefined && !(positive(keep) && keep < maxTokens))
    throw new CompactionConfigError(
      where,
      `the strategy's keepRecentTokens (${JSON.stringify(keep)}) must be under maxTokens (${maxTokens})`,
    )
  let trimAfterMs: number | undefined
  try {
    trimAfterMs = options.trimAfter === undefined ? undefined : toMs(options.trimAfter)
  } catch (error) {
    throw new CompactionConfigError(where, `trimAfter ${error instanceof Error ? error.message : String(error)}`)
  }
  if (trimAfterMs === 0) throw new CompactionConfigError(where, 'trimAfter must be longer than 0 (leave it out to keep the whole log)')
  return {
    maxTokens,
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    countTokens,
    strategy,
    ...(background ? { background: { atTokens: background.atTokens } } : {}),
    ...(trimAfterMs === undefined ? {} : { trimAfterMs }),
  }
}
