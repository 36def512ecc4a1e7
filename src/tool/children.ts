import { DurableSessionRequiredError } from '../errors/index.js'

/** A tool a fan-out starts as a child call: one of the harness's tools, by the object or its name. */
export type ChildToolRef = string | { readonly name: string }

/** Options of one child: its name, the same on every run of the parent (R23: one child per (parent call, name)). */
export interface ChildOptions {
  /** `[A-Za-z0-9_-]`, 1 to 64 characters: the child's call id is `<parent call id>.<name>`. */
  name: string
}

/** A child call a fan-out started: `ctx.tools.wait([handle])` waits for it. */
export interface ChildHandle {
  readonly name: string
  /** `<parent call id>.<name>`: the child's own durable call, in the parent's session. */
  readonly toolCallId: string
  readonly tool: string
}

/** How a child call ended, as a group that collects reads it. */
export type ChildSettled =
  | { name: string; toolCallId: string; status: 'completed'; result: unknown }
  | { name: string; toolCallId: string; status: 'failed'; error: { message: string; code?: string } }

/** `ctx.tools.group(options)`: children started together and settled together. */
export interface ChildGroupOptions {
  /**
   * `'collect'` (default): every child settles, `settled()` lists each outcome. `'cancel-siblings'`:
   * the first child that fails cancels the others (they land `cancelled`) and `settled()` throws its
   * ToolCallError.
   */
  onFailure?: 'cancel-siblings' | 'collect'
}

/** A group of child calls: start or run them, then `settled()` (in start order). */
export interface ChildGroup {
  start(tool: ChildToolRef, input: unknown, options: ChildOptions): Promise<ChildHandle>
  /** Starts one child and waits for the whole group; its own result. */
  run(tool: ChildToolRef, input: unknown, options: ChildOptions): Promise<unknown>
  settled(): Promise<ChildSettled[]>
}

/**
 * `ctx.tools` of a durable tool: other tools of the harness as child calls, each its own durable call
 * on any worker (own job, steps and idempotency keys). While the parent waits it is parked (no worker
 * slot, R24) and wakes when its children settle. A start past the tree's `maxDepth` or `maxCalls`
 * throws ToolCallError with code `tree_limit`; past `maxConcurrent` the child waits its turn.
 */
export interface ChildTools {
  /** Starts a child and waits for it: its result, or its ToolCallError. */
  run(tool: ChildToolRef, input: unknown, options: ChildOptions): Promise<unknown>
  /** Starts a child and returns its handle at once. */
  start(tool: ChildToolRef, input: unknown, options: ChildOptions): Promise<ChildHandle>
  /** The children's results in the handles' order, once all settled; the first failure's ToolCallError. */
  wait(handles: readonly ChildHandle[]): Promise<unknown[]>
  group(options?: ChildGroupOptions): ChildGroup
}

const outside = () => Promise.reject(new DurableSessionRequiredError('ctx.tools'))

/** `ctx.tools` where there is no session to hold children (plain chat(), a middleware's context): each use throws. */
export const NO_CHILD_TOOLS: ChildTools = {
  run: outside,
  start: outside,
  wait: outside,
  group: () => ({ run: outside, start: outside, settled: outside }),
}
