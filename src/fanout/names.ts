import { ToolCallError } from '../errors/index.js'
import type { SubagentLimits } from '../core/index.js'
import type { ChildPlace } from '../log/index.js'

/** A child's name: no `.`, so `<parent>.<name>` splits back into the two at its last `.` (one to one). */
const CHILD_NAME = /^[A-Za-z0-9_-]{1,64}$/
/** A call id's bound (log/keys.ts). */
const MAX_CALL_ID = 200

/**
 * The call id of the child `name` of the call `parentId`: `<parentId>.<name>`, the same on every run
 * of the parent (R23). A bad name is a TypeError that says what a name may be.
 */
export function childCallId(parentId: string, name: unknown): string {
  if (typeof name !== 'string' || !CHILD_NAME.test(name))
    throw new TypeError(
      `A child of a fan-out needs a name of 1 to 64 letters, digits, _ or -, the same on every run (e.g. \`file-\${i}\`), got ${JSON.stringify(name)?.slice(0, 80)}.`,
    )
  const id = `${parentId}.${name}`
  if (id.length > MAX_CALL_ID)
    throw new TypeError(`The child "${name}" of call ${parentId} would have an id over ${MAX_CALL_ID} characters: give it a shorter name.`)
  return id
}

/** The typed error of a start past a limit of the tree (code `tree_limit`): the tool may catch it. */
export function treeLimitError(
  tool: string,
  toolCallId: string,
  place: Exclude<ChildPlace, { status: 'added' | 'exists' }>,
  limits: Required<SubagentLimits>,
): ToolCallError {
  const message =
    place.status === 'depth'
      ? `the child would be at depth ${place.depth} of the tree of call ${place.root}, past subagents.limits.maxDepth (${limits.maxDepth}); nothing was started`
      : place.status === 'calls'
        ? `the tree of call ${place.root} has started ${place.count} children, subagents.limits.maxCalls (${limits.maxCalls}); nothing was started`
        : `the tree of call ${place.root} began ${place.ageMs} ms ago, past subagents.limits.timeoutMs (${limits.timeoutMs}); nothing was started`
  return new ToolCallError(tool, toolCallId, { code: 'tree_limit', message })
}
