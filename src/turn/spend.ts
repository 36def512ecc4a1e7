import type { ModelMessage } from '@tanstack/ai'
import { costNanos, fromNanos, type Harness } from '../core/index.js'
import { estimateTextTokens, estimateTokens } from '../compaction/index.js'
import type { ModelUsage, SessionLog } from '../log/index.js'
import { countModelUsage } from '../telemetry/index.js'
import type { TurnFold } from './fold.js'

/**
 * The usage a model call try is counted with (docs/spend.md): the provider's counts when it reported
 * any, else an estimate marked `estimated` (the prompt's size, and the output so far); the model it
 * was sent to; the cost the provider reported, else the harness's `pricing` for the model.
 */
export function billedUsage(
  harness: Harness,
  reported: ModelUsage | undefined,
  sent: { messages: ReadonlyArray<ModelMessage>; output: string; model?: string },
): ModelUsage {
  const model = sent.model ?? harness.adapter.model
  let usage: ModelUsage
  if (reported) usage = { ...reported }
  else {
    const promptTokens = estimateTokens(sent.messages)
    const completionTokens = estimateTextTokens(sent.output)
    usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, estimated: true }
  }
  if (model) usage.model = model
  const price = model ? harness.pricing?.[model] : undefined
  if (usage.cost === undefined && price) {
    usage.cost = fromNanos(costNanos(usage, price))
    usage.costFrom = 'pricing'
  }
  return usage
}

/** The sum of the usages of several calls (a compaction's summary calls): counts and cost, the model of the last. */
export function sumUsage(a: ModelUsage | undefined, b: ModelUsage): ModelUsage {
  if (!a) return { ...b }
  const add = (x: number | undefined, y: number | undefined) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0))
  const optional = (key: 'cachedTokens' | 'cacheWriteTokens' | 'reasoningTokens') => {
    const value = add(a[key], b[key])
    return value === undefined ? {} : { [key]: value }
  }
  const cost = add(a.cost === undefined ? undefined : Math.round(a.cost * 1e9), b.cost === undefined ? undefined : Math.round(b.cost * 1e9))
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    ...optional('cachedTokens'),
    ...optional('cacheWriteTokens'),
    ...optional('reasoningTokens'),
    ...((b.model ?? a.model) ? { model: (b.model ?? a.model)! } : {}),
    ...(cost !== undefined ? { cost: cost / 1e9 } : {}),
    ...((b.costFrom ?? a.costFrom) ? { costFrom: (b.costFrom ?? a.costFrom)! } : {}),
    ...(a.estimated || b.estimated ? { estimated: true as const } : {}),
  }
}

const NOT_BILLED: ModelUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0 }

/**
 * Counts a model call try of a turn that has no model response in the log (docs/spend.md): one the
 * provider failed ('failed'), whose response another run of the turn logged first ('dropped'), or
 * that was stopped after its request was sent ('cut': an abort, a timeout), or that the provider refused
 * with an HTTP error status before any output ('refused': not billed). Returns the usage it counted.
 * With the usage the provider reported before it failed, else estimated. Once per state of the turn.
 */
export async function countUnloggedTry(
  harness: Harness,
  log: SessionLog,
  inputId: string,
  fold: TurnFold,
  reason: 'failed' | 'dropped' | 'cut' | 'refused',
  sent: { messages: ReadonlyArray<ModelMessage>; output: string; reported?: ModelUsage | undefined; tryId?: string },
): Promise<ModelUsage> {
  // a refused try was not billed: its record clears its mark and adds no call (docs/spend.md)
  const usage = reason === 'refused' ? NOT_BILLED : billedUsage(harness, sent.reported, sent)
  const counted = await log.inputs.logUsage(
    { type: 'harness.usage', inputId, reason, usage, at: Date.now() },
    fold.responses.length + fold.turnRecords,
    harness.name,
    sent.tryId,
    reason === 'refused' ? 0 : 1,
  )
  if (counted === 'ok' && reason !== 'refused') countModelUsage(harness.name, usage)
  return usage
}
