import { createHash } from 'node:crypto'
import type { Harness } from '../core/index.js'
import type { ChildPlace, SessionLog, TreeLimits, TreeRef } from '../log/index.js'

/** What the host gives a fan-out that starts child agents: the harnesses it runs, and how a child agent's turn is aborted. */
export interface AgentHost {
  harnessByName(name: string): Harness | undefined
  abortChild(harness: Harness, sessionId: string, inputId: string, reason: string): Promise<unknown>
}

/** The only input of a child agent's session. */
export const CHILD_INPUT_ID = 'agent-call'

/** The call name of a child agent started by `ctx.agents` (`harness.` is reserved: no tool of a harness has it). */
const AGENT_CALL = 'harness.agent:'

/** The call name of a child agent of harness `name`. */
export function agentCallName(harnessName: string): string {
  return `${AGENT_CALL}${harnessName}`
}

/** The harness a `ctx.agents` child call runs, from its call name; undefined for any other call. */
export function agentOfCall(callName: string): string | undefined {
  return callName.startsWith(AGENT_CALL) ? callName.slice(AGENT_CALL.length) : undefined
}

/** The session of an agent call's child: deterministic, so a run again finds the same child. */
export function childSessionId(sessionId: string, toolCallId: string): string {
  const hash = createHash('sha256').update(`${sessionId}\0${toolCallId}`).digest('hex').slice(0, 20)
  return `${sessionId.slice(0, 170)}.agent-${hash}`
}

/** Limits that never bind: a child agent's session registers its calls' children for itself; its tree's limits are counted at the root. */
const UNBOUNDED: TreeLimits = { maxDepth: Number.MAX_SAFE_INTEGER, maxCalls: Number.MAX_SAFE_INTEGER, timeoutMs: Number.MAX_SAFE_INTEGER }

/** The tree a session stands in when it is a child agent's (its input names it), else undefined: its calls are roots. */
export async function treeOf(log: SessionLog): Promise<TreeRef | undefined> {
  return (await log.inputs.getInput(CHILD_INPUT_ID))?.parent?.tree
}

/**
 * Registers a child once against the limits of its whole tree (R24). In a root session, one write in
 * its tree hash. In a child agent's session, first in the root session's hash, where the tree's depth,
 * count and deadline are (the place `<session>/<call>`: one to one, a session id has no `/`), then in
 * its own, for what its session does with it (its waits, cancel marks, width); a crash between the two
 * finds the first done and does the second. The place returned is the one in this session's hash
 * (childTree makes it the tree's); a refusal's numbers are the whole tree's.
 */
export async function placeChild(
  log: SessionLog,
  logFor: (sessionId: string) => SessionLog,
  tree: TreeRef | undefined,
  child: { id: string; parent: string },
  limits: TreeLimits,
): Promise<ChildPlace> {
  if (!tree) return log.fanout.addChild(child.id, child.parent, limits)
  const own = (id: string) => `${log.sessionId}/${id}`
  const wide = await logFor(tree.sessionId).fanout.addChild(own(child.id), own(child.parent), limits, tree)
  if (wide.status !== 'added' && wide.status !== 'exists') return wide
  const here = await log.fanout.addChild(child.id, child.parent, UNBOUNDED)
  // unbounded: only 'added' or 'exists' come back
  return { status: here.status === 'added' ? 'added' : 'exists', depth: 'depth' in here ? here.depth : 1, root: here.root }
}

/**
 * The tree a child agent's session stands in, from its agent call's place: the place in this
 * session's hash, deepened by this session's own place when it is a child agent's too.
 */
export function childTree(log: SessionLog, tree: TreeRef | undefined, place: { depth: number; root: string }): TreeRef {
  return tree ? { sessionId: tree.sessionId, root: tree.root, depth: tree.depth + place.depth } : { sessionId: log.sessionId, ...place }
}
