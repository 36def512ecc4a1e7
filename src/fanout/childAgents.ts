import { UnknownHarnessError } from '../errors/index.js'
import type {
  ChildAgentGroup,
  ChildAgentHandle,
  ChildAgentHarness,
  ChildAgentOptions,
  ChildAgents,
  ChildAgentSettled,
  ChildGroupOptions,
} from '../tool/index.js'
import { groupOptions, type Child, type Children, type Outcome } from './children.js'
import { agentCallName, agentOfCall, childSessionId, type AgentHost } from './place.js'

/** What an agent child call's input holds: the prompt, and the context of its turn. */
export interface AgentChildInput {
  prompt: string
  context?: unknown
}

/**
 * `ctx.agents` of one attempt of a durable call (docs/fan-out.md): a child agent is a child call
 * (`harness.agent:<harness>`, its id `<parent>.<name>`) that runs a turn of a child session of that
 * harness and waits for it parked (call/agentCall.ts); so it counts in the tree, is cancelled and
 * recovered as any child call, and its turn runs once (R23).
 */
export function childAgents(children: Children, host: AgentHost | undefined, sessionId: string): ChildAgents {
  const handleOf = (c: Child): ChildAgentHandle => ({
    name: c.name,
    toolCallId: c.toolCallId,
    harness: agentOfCall(c.callName) ?? '',
    sessionId: childSessionId(sessionId, c.toolCallId),
  })
  const settledOf = (o: Outcome & { child: Child }): ChildAgentSettled => {
    const base = { name: o.child.name, sessionId: childSessionId(sessionId, o.child.toolCallId) }
    if (o.status === 'completed') return { ...base, outcome: 'completed', text: typeof o.result === 'string' ? o.result : '' }
    const aborted = o.error.code === 'aborted' || o.error.code === 'cancelled'
    return { ...base, outcome: aborted ? 'aborted' : 'failed', error: o.error }
  }

  const start = async (harness: ChildAgentHarness, prompt: string, options: ChildAgentOptions, held = false) => {
    const name = harness?.name
    if (typeof name !== 'string' || !host?.harnessByName(name)) throw new UnknownHarnessError(String(name))
    if (typeof prompt !== 'string' || prompt === '')
      throw new TypeError(`ctx.agents: the prompt of child agent "${String(options?.name)}" must be a non-empty string.`)
    const input: AgentChildInput = options?.context === undefined ? { prompt } : { prompt, context: options.context }
    return children.start(agentCallName(name), `agent "${name}"`, input, options?.name, held)
  }

  const wait = async (handles: readonly ChildAgentHandle[]) => {
    const started = handles.map((h) => children.startedOf(h?.toolCallId, 'ctx.agents.wait'))
    return (await children.settle(started, { cancelSiblings: false })).map(settledOf)
  }

  const group = (options: ChildGroupOptions = {}): ChildAgentGroup => {
    const settle = groupOptions(options, 'ctx.agents')
    const members: Child[] = []
    const groupStart = async (harness: ChildAgentHarness, prompt: string, opts: ChildAgentOptions) => {
      const child = await start(harness, prompt, opts, settle.maxConcurrent !== undefined)
      members.push(child)
      return handleOf(child)
    }
    const settled = async () => (await children.settle([...members], settle)).map(settledOf)
    return {
      start: groupStart,
      async run(harness, prompt, opts) {
        const handle = await groupStart(harness, prompt, opts)
        return (await settled()).find((s) => s.sessionId === handle.sessionId)!
      },
      settled,
    }
  }

  return {
    start: async (harness, prompt, options) => handleOf(await start(harness, prompt, options)),
    wait,
    group,
    async run(harness, prompt, options) {
      return (await wait([handleOf(await start(harness, prompt, options))]))[0]!
    },
  }
}
