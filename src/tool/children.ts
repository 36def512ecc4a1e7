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
  /** At most this many of the group's children run at once; the others start, in start order, as places free up. */
  maxConcurrent?: number
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

/** A harness a child agent runs: the host must run it too (createHarnessHost's `harnesses`, or an agentTool of one). */
export interface ChildAgentHarness {
  readonly name: string
}

/** Options of one child agent: its name (as a child call's), and the context its turn gets (`ctx.context` of its tools). */
export interface ChildAgentOptions extends ChildOptions {
  context?: unknown
}

/** How a child agent's turn settled (`session.settled`), and its session. */
export interface ChildAgentSettled {
  name: string
  /** The child agent's session: `harness log <sessionId>` shows its turn. */
  sessionId: string
  outcome: 'completed' | 'failed' | 'aborted'
  text?: string
  error?: { message: string; code?: string }
}

/** A child agent a fan-out started: `ctx.agents.wait([handle])` waits for it. */
export interface ChildAgentHandle {
  readonly name: string
  /** `<parent call id>.<name>`: the call in the parent's session that waits for the child agent. */
  readonly toolCallId: string
  readonly harness: string
  readonly sessionId: string
}

/** `ctx.agents.group(options)`: child agents started together and settled together. */
export interface ChildAgentGroup {
  start(harness: ChildAgentHarness, prompt: string, options: ChildAgentOptions): Promise<ChildAgentHandle>
  /** Starts one child agent and waits for the whole group; its own settled turn. */
  run(harness: ChildAgentHarness, prompt: string, options: ChildAgentOptions): Promise<ChildAgentSettled>
  /** Every child's settled turn, in start order; under 'cancel-siblings' the first that did not complete throws its ToolCallError. */
  settled(): Promise<ChildAgentSettled[]>
}

/**
 * `ctx.agents` of a durable tool: a turn of a child session of another harness, run durably on any
 * worker; the parent waits parked (no worker slot). The child's session is derived from the call and
 * the name, so a rerun finds the same child; its turn runs once (R23). Children count against the
 * tree's limits like child calls.
 */
export interface ChildAgents {
  /** Runs a child agent's turn and waits for it: how it settled (a failed turn is an outcome, not a throw). */
  run(harness: ChildAgentHarness, prompt: string, options: ChildAgentOptions): Promise<ChildAgentSettled>
  start(harness: ChildAgentHarness, prompt: string, options: ChildAgentOptions): Promise<ChildAgentHandle>
  /** The settled turns in the handles' order, once all settled. */
  wait(handles: readonly ChildAgentHandle[]): Promise<ChildAgentSettled[]>
  group(options?: ChildGroupOptions): ChildAgentGroup
}

const outside = (what: string) => () => Promise.reject(new DurableSessionRequiredError(what))

/** `ctx.tools` where there is no session to hold children (plain chat(), a middleware's context): each use throws. */
export const NO_CHILD_TOOLS: ChildTools = {
  run: outside('ctx.tools'),
  start: outside('ctx.tools'),
  wait: outside('ctx.tools'),
  group: () => ({ run: outside('ctx.tools'), start: outside('ctx.tools'), settled: outside('ctx.tools') }),
}

/** `ctx.agents` where there is no session to hold children: each use throws. */
export const NO_CHILD_AGENTS: ChildAgents = {
  run: outside('ctx.agents'),
  start: outside('ctx.agents'),
  wait: outside('ctx.agents'),
  group: () => ({ run: outside('ctx.agents'), start: outside('ctx.agents'), settled: outside('ctx.agents') }),
}
