import type { AnyServerTool } from '@tanstack/ai'
import type { Harness } from './harness.js'

/** Marks a tool made by agentTool: its call runs a whole harness as a child session. */
export const AGENT = Symbol.for('durable-harness.agentTool')
export interface AgentToolMarker {
  readonly [AGENT]: { harness: Harness }
}

/** True for a tool made by agentTool (a call of it runs no execute: the turn and the tool worker both need to know). */
export function isAgentTool(tool: unknown): tool is AnyServerTool & AgentToolMarker {
  return typeof tool === 'object' && tool !== null && AGENT in tool
}
