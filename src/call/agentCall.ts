import { AGENT, DEFAULT_SUBAGENT_LIMITS, type AgentToolMarker, type Harness } from '../core/index.js'
import {
  rollUpUsage,
  type BeginResult,
  type InputState,
  type InputTags,
  type ParentCall,
  type SessionLog,
  type TreeRef,
} from '../log/index.js'
import {
  agentOfCall,
  CHILD_INPUT_ID,
  childSessionId,
  childTree,
  placeChild,
  treeLimitError,
  treeOf,
  type AgentChildInput,
  type AgentHost,
} from '../fanout/index.js'
import { enqueueTurn, type HarnessQueues } from '../queue/index.js'
import { Park, toToolError } from '../tool/index.js'
import type { CallOutcome } from './runCall.js'
import type { ToolCall } from './loggedCall.js'

export { CHILD_INPUT_ID, childSessionId }
/** A parked agent call re-checks its child this often, in case the child's wake-up was lost. */
const AGENT_RECHECK_MS = 60_000

export interface AgentCallDeps {
  /** The harness of the parent call. */
  harness: Harness
  log: SessionLog
  logFor(sessionId: string): SessionLog
  queuesOf(harness: Harness): HarnessQueues
}

/** The agent a call runs: an agentTool's (the model called it), or a `ctx.agents` child's (fromCode). */
export interface AgentOfCall extends AgentToolMarker {
  fromCode?: boolean
}

/**
 * The agent of a `ctx.agents` child call (`harness.agent:<harness>`), only for a call its tree knows:
 * neither a model nor a runTool caller can start a harness by naming one (an unknown tool for them).
 */
export async function agentToolOf(call: ToolCall, log: SessionLog, host: AgentHost | undefined): Promise<AgentOfCall | undefined> {
  const name = agentOfCall(call.name)
  const harness = name === undefined ? undefined : host?.harnessByName(name)
  if (!harness || !call.toolCallId.includes('.')) return undefined
  if ((await log.fanout.childAtBegin(call.toolCallId)).root === undefined) return undefined
  return { [AGENT]: { harness }, fromCode: true }
}

/**
 * One attempt of an agent call. The child turn runs on its own (durably, on any worker); the call
 * parks until the child settles, then keeps the child's answer as its result. An agentTool call cut
 * by a crash gets a tool error (R11), unless its child waits for a person; a `ctx.agents` child goes
 * on (its turn runs once whatever reruns it). The child's session stands in the parent's tree: its
 * place is counted against the limits (R24) before its turn is started.
 */
export async function runAgentCall(
  tool: AgentOfCall,
  data: ToolCall,
  begin: BeginResult,
  deps: AgentCallDeps,
  interrupted: CallOutcome,
): Promise<CallOutcome> {
  const child = tool[AGENT].harness
  const childLog = deps.logFor(childSessionId(data.sessionId, data.toolCallId))
  if (!tool.fromCode && begin.kind === 'cut' && (await childLog.inputs.openQuestions()).length === 0) return interrupted
  const settled = await childLog.inputs.getSettled(CHILD_INPUT_ID)
  if (settled) {
    // its spend joins the tree's total at the root, once (before the call lands: a rerun does it again, counted once)
    const tree = (await childLog.inputs.getInput(CHILD_INPUT_ID))?.parent?.tree
    if (tree) await rollUpUsage(childLog.stream, deps.logFor(tree.sessionId).stream)
    if (settled.outcome === 'completed') return { result: settled.text ?? '' }
    const code = settled.outcome === 'aborted' ? 'aborted' : settled.error?.code
    return { error: { message: settled.error?.message ?? `Agent ${child.name} ${settled.outcome}.`, ...(code ? { code } : {}) } }
  }
  const input = await childLog.inputs.getInput(CHILD_INPUT_ID)
  if (!input) {
    const placed = await placeAgent(tool, data, deps)
    if ('error' in placed) return placed
    const { prompt, context } = promptOf(data.input)
    const parent: ParentCall = { harness: deps.harness.name, sessionId: data.sessionId, toolCallId: data.toolCallId, tree: placed.tree }
    const tags = await inheritedTags(deps.log, begin.input, placed.root)
    await childLog.inputs.addInput(CHILD_INPUT_ID, prompt, child.name, { parent, ...tags, ...(context === undefined ? {} : { context }) })
  }
  // enqueued again on every wake-up too: a no-op while the turn job exists, a repair if it was lost
  await enqueueTurn(deps.queuesOf(child), child, childLog.sessionId, CHILD_INPUT_ID)
  return { park: new Park('agent', Date.now() + AGENT_RECHECK_MS, childLog.sessionId) }
}

/**
 * The tree the child session stands in. A `ctx.agents` child was placed at its start (its place is
 * read); an agentTool call is placed here, as a child of its turn (`~<inputId>`: every agent a turn's
 * model asks for counts in one tree), refused past a limit with `tree_limit`, which the model sees.
 */
async function placeAgent(
  tool: AgentOfCall,
  data: ToolCall,
  deps: AgentCallDeps,
): Promise<{ tree: TreeRef; root: string } | { error: ReturnType<typeof toToolError> }> {
  const { log } = deps
  const tree = await treeOf(log)
  if (tool.fromCode) {
    const place = await log.fanout.childAtBegin(data.toolCallId)
    const local = { depth: place.depth ?? 1, root: place.root ?? data.toolCallId }
    return { tree: childTree(log, tree, local), root: local.root }
  }
  const limits = deps.harness.subagents ?? DEFAULT_SUBAGENT_LIMITS
  const place = await placeChild(log, deps.logFor, tree, { id: data.toolCallId, parent: `~${data.inputId ?? data.toolCallId}` }, limits)
  if (place.status === 'depth' || place.status === 'calls' || place.status === 'timeout')
    return { error: toToolError(treeLimitError(data.name, data.toolCallId, place, limits)) }
  return { tree: childTree(log, tree, place), root: place.root }
}

/** The prompt (and context) an agent call's input holds: `{ prompt }` of an agentTool, `{ prompt, context }` of ctx.agents. */
function promptOf(input: unknown): AgentChildInput {
  const prompt = typeof input === 'object' && input !== null && 'prompt' in input ? input.prompt : undefined
  const context = typeof input === 'object' && input !== null && 'context' in input ? input.context : undefined
  return { prompt: typeof prompt === 'string' ? prompt : JSON.stringify(input), ...(context === undefined ? {} : { context }) }
}

/**
 * Who asked, for the child's turn: the principal and metadata of the turn at the tree's root. From
 * the call's own turn, else this session's (a child agent's: inherited already), else the turn of the
 * root call of this session's tree.
 */
async function inheritedTags(log: SessionLog, input: InputState | null | undefined, root: string): Promise<InputTags> {
  const from = input ?? (await log.inputs.getInput(CHILD_INPUT_ID)) ?? (await rootTurn(log, root))
  return { ...(from?.principal === undefined ? {} : { principal: from.principal }), ...(from?.metadata ? { metadata: from.metadata } : {}) }
}

async function rootTurn(log: SessionLog, root: string): Promise<InputState | null> {
  if (root.startsWith('~')) return log.inputs.getInput(root.slice(1)).catch(() => null)
  const inputId = (await log.calls.getCall(root))?.owner?.inputId
  return inputId === undefined ? null : log.inputs.getInput(inputId)
}

/** True when the child session of a parked agent call has settled (checked again after parking). */
export async function childSettled(logFor: (sid: string) => SessionLog, data: ToolCall): Promise<boolean> {
  const input = await logFor(childSessionId(data.sessionId, data.toolCallId)).inputs.getInput(CHILD_INPUT_ID)
  return input?.status === 'settled'
}
