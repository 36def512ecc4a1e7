import { randomBytes } from 'node:crypto'
import type { ModelMessage } from '@tanstack/ai'
import type { Logger } from 'pino'
import { costNanos, fromNanos, toNanos, type Harness } from '../core/index.js'
import { estimateTokens } from '../compaction/index.js'
import { BudgetExceededError } from '../errors/index.js'
import {
  asHarnessRecord,
  encodeRecord,
  markModelTry,
  reserveBudget,
  settleBudget,
  turnBudgets,
  usageCounts,
  type BudgetAmount,
  type BudgetHold,
  type BudgetRefusal,
  type InputState,
  type ModelUsage,
  type RecordOf,
  type SessionLog,
  type TryMark,
  type TurnBudget,
} from '../log/index.js'
import { countModelUsage } from '../telemetry/index.js'
import { billedUsage, countUnloggedTry } from './spend.js'
import type { TurnFold } from './fold.js'

/** How long a reservation holds before a lost settle is counted as spent at its estimate (reserveBudget.lua). */
const RESERVATION_LEASE_MS = 15 * 60_000

/** A model call try: its id, the reservations it holds, and what it would count if it were cut. */
export interface ModelTry {
  id: string
  holds: BudgetHold[]
  cutUsage: ModelUsage
}

/** What a spend counts as in a budget: nano-USD, total tokens, one try. */
function budgetAmount(usage: ModelUsage): BudgetAmount {
  return { cost: usage.cost === undefined ? 0 : toNanos(usage.cost), tokens: usage.totalTokens, calls: 1 }
}

/**
 * Reserves a model call's estimate in every budget scope of its turn, in order; the first scope that
 * refuses releases the ones before it and says why. The estimate: the prompt's size and
 * `reserveOutputTokens`, priced by the harness's `pricing` (no price: no cost reserved).
 */
export async function reserveModelTry(
  harness: Harness,
  log: SessionLog,
  turn: { input: InputState; inputId: string; fold: TurnFold; logger: Logger },
  messages: ReadonlyArray<ModelMessage>,
): Promise<InFlightTry | { exceeded: BudgetFailure | undefined }> {
  const { input, fold } = turn
  // a try a crash cut (its mark still on the input this job read) counts first: its spend is then in the budgets
  if (input.trying) {
    await countCutTry(harness, log, turn.inputId, undefined)
    delete input.trying
  }
  const id = randomBytes(8).toString('hex')
  const cutUsage = billedUsage(harness, undefined, { messages, output: '' })
  const budgets = turnBudgets(harness, log, input)
  const modelTry: ModelTry = { id, holds: [], cutUsage }
  const flight = { modelTry, messages, fold, output: '', sent: false }
  if (budgets.length === 0) return flight
  const output = harness.budgets?.reserveOutputTokens ?? 0
  const promptTokens = estimateTokens(messages)
  const price = cutUsage.model ? harness.pricing?.[cutUsage.model] : undefined
  const estimate = {
    cost: price ? costNanos({ promptTokens, completionTokens: output }, price) : 0,
    tokens: promptTokens + output,
    calls: 1,
  }
  for (const turnBudget of budgets) {
    const reply = await reserveBudget(log.stream, turnBudget.hold, id, estimate, {
      max: turnBudget.budget?.max,
      onExceeded: turnBudget.budget?.onExceeded,
      storeMax: turnBudget.storeMax === true,
      leaseMs: RESERVATION_LEASE_MS,
      ...(turnBudget.ttlMs !== undefined ? { ttlMs: turnBudget.ttlMs } : {}),
    })
    if (typeof reply === 'object') {
      await settleModelTry(log, modelTry, undefined)
      turn.logger.warn({ budget: turnBudget.scope, metric: reply.metric }, 'budget exceeded; no model call')
      return { exceeded: await budgetExceeded(log, turn.inputId, fold.responses.length, turnBudget, reply) }
    }
    modelTry.holds.push(turnBudget.hold)
  }
  return flight
}

/**
 * Marks the try on its input right before its request is sent (beginModelTry.lua). A try of this turn
 * still marked there was cut: it is counted now with its estimate, and its reservations settle with it.
 */
async function markTrySent(harness: Harness, log: SessionLog, inputId: string, modelTry: ModelTry): Promise<void> {
  const usage = modelTry.cutUsage
  const record: RecordOf<'harness.usage'> = { type: 'harness.usage', inputId, reason: 'cut', usage, at: Date.now() }
  const mark = {
    id: modelTry.id,
    record: encodeRecord(record),
    counts: usageCounts(usage),
    model: usage.model ?? '',
    holds: modelTry.holds.map((h): [string, BudgetHold['scope']] => [h.key, h.scope]),
  }
  await countCutTry(harness, log, inputId, mark)
}

/** The usage a cut try's mark counted it with. */
function usageOf(cut: TryMark): ModelUsage | undefined {
  const record = asHarnessRecord(JSON.parse(cut.record))
  return record?.type === 'harness.usage' ? record.usage : undefined
}

/** Marks a try (or, with none, only clears a cut one); a cut try found marked is counted, and its reservations stay spent as reserved. */
async function countCutTry(harness: Harness, log: SessionLog, inputId: string, mark: TryMark | undefined): Promise<void> {
  const cut = await markModelTry(log.stream, inputId, mark, log.inputs.usageDayKey(harness.name))
  if (cut === undefined || cut === 'settled') return
  const usage = usageOf(cut)
  if (usage) countModelUsage(harness.name, usage)
  // what a cut try cost is unknown (the provider may have answered it whole): its budgets keep what it reserved
  for (const [key, scope] of cut.holds) await settleBudget(log.stream, { key, scope }, cut.id, 'reserved')
}

/** Settles a try's reservations with what it spent (undefined: nothing, a release). */
export async function settleModelTry(log: SessionLog, modelTry: ModelTry, usage: ModelUsage | undefined): Promise<void> {
  const spent = usage ? budgetAmount(usage) : { cost: 0, tokens: 0, calls: 0 }
  for (const hold of modelTry.holds) await settleBudget(log.stream, hold, modelTry.id, spent)
}

interface BudgetFailure {
  outcome: 'failed'
  error: { code: string; message: string }
}

/**
 * A refused model call: a `harness.budget.exceeded` record, then the turn pauses (`harness.turn.paused`,
 * code `budget_exceeded`: `session.resume` tries again) or returns the failure to settle with.
 */
async function budgetExceeded(
  log: SessionLog,
  inputId: string,
  responses: number,
  refused: TurnBudget,
  why: BudgetRefusal,
): Promise<BudgetFailure | undefined> {
  const action = why.onExceeded
  const usd = (n: number) => (why.metric === 'cost' ? fromNanos(n) : n)
  const figures = { max: usd(why.max), spent: usd(why.spent), held: usd(why.held), estimate: usd(why.estimate) }
  const error = new BudgetExceededError(refused.scope, why.metric, figures)
  await log.stream.append([
    {
      type: 'harness.budget.exceeded',
      inputId,
      scope: refused.scope,
      metric: why.metric,
      ...figures,
      action,
      ...(refused.principal !== undefined ? { principal: refused.principal } : {}),
      at: Date.now(),
    },
  ])
  const failure: BudgetFailure = { outcome: 'failed', error: { code: error.code, message: error.message } }
  if (action === 'fail') return failure
  await log.inputs.logTurnRecord({ type: 'harness.turn.paused', inputId, error: failure.error, at: Date.now() }, responses)
  return undefined
}

/** A try between its reservation and its count: its messages, the text streamed so far, whether its request went out. */
export interface InFlightTry {
  modelTry: ModelTry
  messages: ReadonlyArray<ModelMessage>
  fold: TurnFold
  output: string
  sent: boolean
  /** The try's mark on its way to Redis (waited for after the write that counts the try, for its failure). */
  marked?: Promise<void>
}

/**
 * The hold callModel confirms right before it sends the request: the attempt's lock and slot first,
 * then the try's mark on its input (markTrySent), so a try is counted only once its request can go out.
 * The mark is sent, not waited for: it lands while the request is on its way, and the write that
 * counts the try follows it on the same connection (a mark that lands late, after a resend, sets
 * nothing: beginModelTry.lua). The turn waits for it (`marked`) after that write, to see its failure.
 */
export function sendingTry(
  harness: Harness,
  log: SessionLog,
  inputId: string,
  flight: InFlightTry,
  hold: { confirm(): Promise<void> | undefined } | undefined,
): { confirm(): Promise<void> } {
  return {
    async confirm() {
      await hold?.confirm()
      flight.marked = markTrySent(harness, log, inputId, flight.modelTry)
      // awaited by the write that counts the try; a failure surfaces there
      flight.marked.catch(() => {})
      flight.sent = true
    },
  }
}

/** A try a throw stopped: counted as cut with what it streamed when its request went out, else its holds released. */
export async function endInFlightTry(harness: Harness, log: SessionLog, inputId: string, flight: InFlightTry): Promise<void> {
  if (!flight.sent) return settleModelTry(log, flight.modelTry, undefined)
  await flight.marked?.catch(() => {})
  const { messages, output, modelTry } = flight
  const usage = await countUnloggedTry(harness, log, inputId, flight.fold, 'cut', { messages, output, tryId: modelTry.id })
  await settleModelTry(log, modelTry, usage)
}
