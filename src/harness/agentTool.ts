import { chat, streamToText, toolDefinition, type AnyServerTool } from '@tanstack/ai'
import { z } from 'zod'
import { AGENT, isAgentTool, type AgentToolMarker, type Harness } from '../core/index.js'
import { UnknownInputError } from '../errors/index.js'
import type { AgentHost } from '../fanout/index.js'
import { rollUpUsage, type SessionLog } from '../log/index.js'
import type { Session } from './session.js'

/** Options of `agentTool`: the tool name and description the parent model sees, and how the input becomes the child prompt. */
export interface AgentToolOptions {
  /** Default: the harness name with `/` as `_`. */
  name?: string
  description?: string
}

/**
 * Makes a whole harness callable as a tool: a call runs a child session of that harness with the
 * tool input's `prompt`, and the child's final answer is the tool result. In a durable session the
 * child turn runs as its own durable turn and the call waits parked; in plain `chat()` it runs inline.
 */
export function agentTool(harness: Harness, options: AgentToolOptions = {}): AnyServerTool & AgentToolMarker {
  const tool = toolDefinition({
    name: options.name ?? harness.name.replace(/\//g, '_'),
    description: options.description ?? `Ask the ${harness.name} agent. It works on its own and answers in text.`,
    inputSchema: z.object({ prompt: z.string().describe('What the agent should do') }),
  }).server(async ({ prompt }) =>
    streamToText(
      chat({
        adapter: harness.adapter,
        messages: [{ role: 'user', content: prompt }],
        tools: [...harness.tools],
        ...(harness.systemPrompts ? { systemPrompts: [...harness.systemPrompts] } : {}),
      }),
    ),
  )
  return Object.assign(tool, { [AGENT]: { harness } })
}

/** The harnesses reachable from these through agent tools, each once: a host runs them all. */
export function withAgentHarnesses(harnesses: ReadonlyArray<Harness>): Harness[] {
  const all = new Map<string, Harness>()
  const visit = (h: Harness) => {
    if (all.has(h.name)) return
    all.set(h.name, h)
    for (const tool of h.tools) if (isAgentTool(tool)) visit(tool[AGENT].harness)
  }
  harnesses.forEach(visit)
  return [...all.values()]
}

/**
 * The host's child agents (agentTool, ctx.agents): its harnesses by name, and a child's turn aborted as
 * `session.abort` does, its spend then rolled up into its tree's total (once: rollUpUsage's marker).
 */
export function agentHost(
  harnesses: ReadonlyMap<string, Harness>,
  open: (harness: Harness, sessionId: string) => Session,
  logFor: (sessionId: string) => SessionLog,
): AgentHost {
  return {
    harnessByName: (name) => harnesses.get(name),
    async abortChild(harness, sessionId, inputId, reason) {
      const aborted = await open(harness, sessionId)
        .abort(inputId, reason)
        .catch((error: unknown) => (error instanceof UnknownInputError ? false : Promise.reject(error)))
      const child = logFor(sessionId)
      const tree = (await child.inputs.getInput(inputId))?.parent?.tree
      if (tree) await rollUpUsage(child.stream, logFor(tree.sessionId).stream)
      return aborted
    },
  }
}
