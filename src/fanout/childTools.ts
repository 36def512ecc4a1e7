import { ToolCallError, UnknownToolError } from '../errors/index.js'
import { toolNames, toolOf } from '../core/index.js'
import type { ChildGroup, ChildGroupOptions, ChildHandle, ChildOptions, ChildSettled, ChildToolRef, ChildTools } from '../tool/index.js'
import { groupOptions, type Child, type Children } from './children.js'

const handleOf = (c: Child): ChildHandle => ({ name: c.name, toolCallId: c.toolCallId, tool: c.callName })

/**
 * `ctx.tools` of one attempt of a durable call (docs/fan-out.md): other tools of the harness as child
 * calls, each its own durable call, over the attempt's children (children.ts).
 */
export function childTools(children: Children, harness: Parameters<typeof toolOf>[0]): ChildTools {
  const start = async (ref: ChildToolRef, input: unknown, options: ChildOptions, held = false) => {
    const toolName = typeof ref === 'string' ? ref : ref?.name
    if (typeof toolName !== 'string' || !toolOf(harness, toolName)) throw new UnknownToolError(String(toolName), toolNames(harness))
    return children.start(toolName, `tool "${toolName}"`, input, options?.name, held)
  }

  const wait = async (handles: readonly ChildHandle[]): Promise<unknown[]> => {
    const started = handles.map((h) => children.startedOf(h?.toolCallId, 'ctx.tools.wait'))
    const outcomes = await children.settle(started, { cancelSiblings: false })
    const failed = outcomes.find((o) => o.status === 'failed')
    if (failed?.status === 'failed') throw new ToolCallError(failed.child.callName, failed.child.toolCallId, failed.error)
    return outcomes.map((o) => (o.status === 'completed' ? o.result : undefined))
  }

  const group = (options: ChildGroupOptions = {}): ChildGroup => {
    const settle = groupOptions(options, 'ctx.tools')
    const members: Child[] = []
    const groupStart = async (ref: ChildToolRef, input: unknown, opts: ChildOptions) => {
      const child = await start(ref, input, opts, settle.maxConcurrent !== undefined)
      members.push(child)
      return handleOf(child)
    }
    const settled = async (): Promise<ChildSettled[]> =>
      (await children.settle([...members], settle)).map(({ child, ...o }) => ({ name: child.name, toolCallId: child.toolCallId, ...o }))
    return {
      start: groupStart,
      async run(ref, input, opts) {
        const handle = await groupStart(ref, input, opts)
        const outcome = (await settled()).find((o) => o.toolCallId === handle.toolCallId)!
        if (outcome.status === 'failed') throw new ToolCallError(handle.tool, handle.toolCallId, outcome.error)
        return outcome.result
      },
      settled,
    }
  }

  return {
    start: async (ref, input, options) => handleOf(await start(ref, input, options)),
    wait,
    group,
    async run(ref, input, options) {
      return (await wait([handleOf(await start(ref, input, options))]))[0]
    },
  }
}
