import { agentOfCall, CHILD_INPUT_ID, childSessionId } from '../fanout/index.js'
import { parentOfChild, type SessionLog } from '../log/index.js'

/** One call of a fan-out tree (`session.tree()`), with the calls and child agent it started. */
export interface TreeNode {
  toolCallId: string
  /** The call's tool, `harness.agent:<harness>` for a child agent of `ctx.agents`; a turn's node: '' */
  tool: string
  /** A turn's node (the agentTool calls of its model hang under it): its input id. */
  inputId?: string
  /** The call's state: 'requested' until it begins. */
  status: 'requested' | 'running' | 'parked' | 'done' | 'again'
  /** How a landed call ended: its error's code, or 'ok'. */
  result?: string
  depth: number
  children: TreeNode[]
  /** The child agent's session this call runs (ctx.agents, agentTool), with its turn's status and its own tree. */
  agent?: { sessionId: string; harness: string; status: 'open' | 'settled'; outcome?: string; children: TreeNode[] }
}

/** The most calls one tree read visits (the sessions of child agents included): a view, not an export. */
const MAX_NODES = 5_000

/**
 * The fan-out trees of a session, read from its tree hash and its calls (one HGETALL, one HMGET), and
 * for each child agent the same of its session, depth first. For `harness log --tree` and the
 * dashboard: what runs where now, not the record (that is the log).
 */
export async function readTree(
  log: SessionLog,
  logFor: (sessionId: string) => SessionLog,
  budget = { left: MAX_NODES },
): Promise<TreeNode[]> {
  const places = (await log.fanout.places()).slice(0, Math.max(0, budget.left))
  budget.left -= places.length
  const known = new Map(places.map((p) => [p.id, p]))
  // a child's parent is in its id (`<parent>.<name>`); an agentTool call's is its turn (`~<inputId>`)
  const parentOf = (p: { id: string; root: string }) => (p.root.startsWith('~') ? p.root : (parentOfChild(p.id) ?? p.root))
  const roots = [...new Set(places.map(parentOf).filter((id) => !known.has(id)))]
  const ids = [...places.map((p) => p.id), ...roots.filter((id) => !id.startsWith('~'))]
  const states = await log.fanout.states(ids)
  const stateOf = new Map(ids.map((id, i) => [id, states[i]]))
  const nodes = new Map<string, TreeNode>()
  const nodeOf = (id: string, depth: number): TreeNode => {
    let node = nodes.get(id)
    if (node) return node
    const state = stateOf.get(id)
    node = id.startsWith('~')
      ? { toolCallId: '', tool: '', inputId: id.slice(1), status: 'done', depth, children: [] }
      : {
          toolCallId: id,
          tool: state?.name ?? '',
          status: state?.status ?? 'requested',
          ...(state?.result ? { result: state.result.error?.code ?? (state.result.error ? 'error' : 'ok') } : {}),
          depth,
          children: [],
        }
    nodes.set(id, node)
    return node
  }
  for (const p of places) nodeOf(parentOf(p), p.depth - 1).children.push(nodeOf(p.id, p.depth))
  for (const p of places) {
    const node = nodes.get(p.id)!
    const agentSession = childSessionId(log.sessionId, p.id)
    // a ctx.agents child, or an agentTool call (placed under its turn)
    if (agentOfCall(node.tool) === undefined && !p.root.startsWith('~')) continue
    const input = await logFor(agentSession).inputs.getInput(CHILD_INPUT_ID)
    if (!input) continue
    node.agent = {
      sessionId: agentSession,
      harness: input.harness,
      status: input.status,
      ...(input.outcome ? { outcome: input.outcome } : {}),
      children: budget.left > 0 ? await readTree(logFor(agentSession), logFor, budget) : [],
    }
  }
  for (const node of nodes.values()) node.children.sort((a, b) => a.toolCallId.localeCompare(b.toolCallId, 'en', { numeric: true }))
  return roots.map((id) => nodes.get(id)!)
}
