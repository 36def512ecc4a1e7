import type { Park } from '../tool/index.js'
import { childAgents } from './childAgents.js'
import { createChildren, type FanoutDeps } from './children.js'
import { childTools } from './childTools.js'

/**
 * `ctx.tools` and `ctx.agents` of one attempt of a durable call, over one set of children (one name
 * space: a name is one child, tool or agent), and the park their wait hit, even if the tool caught it.
 */
export function createFanout(deps: FanoutDeps): {
  tools: ReturnType<typeof childTools>
  agents: ReturnType<typeof childAgents>
  readonly parked: Park | null
} {
  const children = createChildren(deps)
  return {
    tools: childTools(children, deps.harness),
    agents: childAgents(children, deps.agents, deps.log.sessionId),
    get parked() {
      return children.parked
    },
  }
}
