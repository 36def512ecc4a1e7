import { convertSchemaToJsonSchema } from '@tanstack/ai'
import { canonical } from '../harness/version.js'
import { EventTimeoutError } from '../errors/index.js'
import { WAIT_STEP_PREFIX, waitStepValueOf, type SessionLog } from '../log/index.js'
import type { DurableToolMarker } from '../tool/durableTool.js'
import {
  DURABLE,
  NO_CHILD_AGENTS,
  NO_CHILD_TOOLS,
  questionIdOf,
  SecretStore,
  validateNow,
  type DurableToolContext,
  type Step,
} from '../tool/index.js'

/** Where a dry replay ended: the code returned or threw, or it stopped at a step it would have to run (or wait on). */
export type ReplayEnd =
  | { kind: 'returned' }
  | { kind: 'threw'; message: string }
  | { kind: 'stopped'; step: string; why: 'new step' | 'waits' | 'answer refused' }

/** The address a wait of the new code registers (`sessionId`: scoped to the call's session). */
export interface ReplayedWait {
  event: string
  key: string
  scope?: 'session'
}

/** What a dry replay found: the steps the code reached, where it ended, and the open question it met, if any. */
export interface DryReplay {
  reached: Set<string>
  /** The waits (step.waitForEvent) the code reached, by step name, with the address each registers. */
  waits: Map<string, ReplayedWait>
  end: ReplayEnd
  /** Problems with a stored question the code reached (its answer, or its changed schema). */
  questions: Array<{ step: string; questionId: string; message: string }>
}

/** The private stop signal: a step the log does not have (its side effect would run) or a wait; never a tool's error. */
class ReplayStop {
  constructor(readonly end: Extract<ReplayEnd, { kind: 'stopped' }>) {}
}

/**
 * Runs a call's new tool code with a step context that answers each step from storage and stops at
 * the first step the log does not have, so no side effect runs and no provider is called (a step's
 * fn never runs). Code between steps does run, as it would on a replay.
 */
export async function dryReplay(
  tool: DurableToolMarker,
  input: unknown,
  call: { toolCallId: string; steps: ReadonlyMap<string, unknown>; context?: unknown },
  log: SessionLog,
): Promise<DryReplay> {
  const reached = new Set<string>()
  const waits = new Map<string, ReplayedWait>()
  const questions: DryReplay['questions'] = []
  let stopped: ReplayStop | null = null
  const stop = (step: string, why: 'new step' | 'waits' | 'answer refused'): never => {
    stopped ??= new ReplayStop({ kind: 'stopped', step, why })
    throw stopped
  }
  const enter = (name: string) => {
    if (stopped) throw stopped
    reached.add(name)
    return call.steps.has(name)
  }
  const wait = (name: string, wakeAt: () => number | undefined) => {
    if (!enter(name)) stop(name, 'new step')
    const at = wakeAt()
    if (at !== undefined && Date.now() < at) stop(name, 'waits')
  }
  // a step's stored value is what the code's own step returned (or an answer its schema took) when it ran: T by the step's contract (R1)
  const storedAs = <T>(value: unknown): T => value as T
  const step: Step = {
    do: async (name) => (enter(name) ? storedAs(call.steps.get(name)) : stop(name, 'new step')),
    sleep: async (name) => wait(name, () => wakeAtOf(call.steps.get(name))),
    sleepUntil: async (name) => wait(name, () => wakeAtOf(call.steps.get(name))),
    // an event's payload once delivered is a stored step; a wait not delivered yet is where the call waits, past its timeout it throws
    waitForEvent: async (options) => {
      if (enter(options.name)) return storedAs(call.steps.get(options.name))
      const { event, key } = options
      waits.set(options.name, { event, key, ...(options.scope === 'session' ? { scope: 'session' as const } : {}) })
      const stored = call.steps.get(`${WAIT_STEP_PREFIX}${options.name}`)
      const until = stored === undefined ? undefined : waitStepValueOf(stored).until
      if (until !== undefined && Date.now() >= until) throw new EventTimeoutError(event, key, new Date(until).toISOString())
      return stop(options.name, 'waits')
    },
    ask: async (options) => {
      if (!enter(options.name)) return stop(options.name, 'new step')
      const questionId = questionIdOf(call.toolCallId, options.name)
      const found = await log.inputs.getQuestion(questionId)
      if (found?.answer.found) {
        const checked = await validateNow(options.schema, found.answer.value)
        if (checked.ok) return storedAs(checked.value)
        questions.push({ step: options.name, questionId, message: `the new code refuses its logged answer: ${checked.message}` })
        return stop(options.name, 'answer refused')
      }
      const schema = convertSchemaToJsonSchema(options.schema) ?? {}
      if (found && canonical(schema) !== canonical(found.question.schema))
        questions.push({
          step: options.name,
          questionId,
          message:
            'the new code asks it with another answer schema: an answer valid under the stored one (which `harness answer` checks) may be refused when the call wakes',
        })
      return stop(options.name, 'waits')
    },
  }
  const ctx: DurableToolContext = {
    toolCallId: call.toolCallId,
    context: call.context,
    abortSignal: new AbortController().signal,
    step,
    append: () => {},
    secrets: new SecretStore(),
    emitCustomEvent: () => {},
    tools: NO_CHILD_TOOLS,
    agents: NO_CHILD_AGENTS,
    budget: async () => [],
  }
  // read through a function: the closures above set it, which the compiler does not follow here
  const stoppedEnd = (): ReplayEnd | undefined => stopped?.end
  let end: ReplayEnd
  try {
    await tool[DURABLE].execute(input, ctx)
    end = stoppedEnd() ?? { kind: 'returned' }
  } catch (error) {
    // a wait past its timeout throws as it would when woken: the call lands that tool error, on any code
    const timedOut = error instanceof EventTimeoutError
    end =
      stoppedEnd() ?? (timedOut ? { kind: 'returned' } : { kind: 'threw', message: error instanceof Error ? error.message : String(error) })
  }
  return { reached, waits, end, questions }
}

/** The wake time a sleep step stored (`{ wakeAt }`), if it stored one. */
function wakeAtOf(value: unknown): number | undefined {
  return typeof value === 'object' && value !== null && 'wakeAt' in value && typeof value.wakeAt === 'number' ? value.wakeAt : undefined
}
