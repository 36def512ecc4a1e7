// The public API: what each entry point of package.json `exports` holds, name by name (an allowlist:
// a new export fails here until it is added to its list on purpose), that each declaration carries
// TSDoc (an @example on the entry points), as an editor shows it to a user, and that docs/errors.md
// names every error code.
import { readFileSync } from 'node:fs'
import ts from 'typescript'
import { entryProgram } from '../helpers/tsProgram.js'
import { describe, expect, it } from 'vitest'

const ENTRIES = {
  '.': 'src/index.ts',
  './ops': 'src/entries/ops.ts',
  './hooks': 'src/entries/hooks.ts',
  './http': 'src/http/index.ts',
  './dashboard': 'src/dashboard/index.ts',
  './testing': 'src/testing/index.ts',
  './mcp': 'src/mcp/index.ts',
}

// Every name of every entry, sorted. Adding one is a decision about the public surface: the root holds
// what a tool author and a host owner use (at most 70 names, at most 15 error classes); operators'
// views go to ./ops, the hooks' argument types to ./hooks.
const EXPORTS: Record<keyof typeof ENTRIES, string[]> = {
  '.': [
    'AgentToolOptions',
    'AppendRecord',
    'AskOptions',
    'CancelOn',
    'DurabilityOptions',
    'DurableExecute',
    'DurableHarnessError',
    'DurableHarnessErrorCode',
    'DurableServerTool',
    'DurableToolContext',
    'DurableToolOptions',
    'Duration',
    'EventTimeoutError',
    'EventsOptions',
    'Harness',
    'HarnessHost',
    'HarnessLimits',
    'HarnessOptions',
    'HostOptions',
    'InvalidAnswerError',
    'InvalidEventPayloadError',
    'Json',
    'Limit',
    'NonRetryableError',
    'PayloadCodec',
    'PromptOptions',
    'QuestionClosedError',
    'QuestionExpiredError',
    'RedisClient',
    'RedisConnection',
    'Replay',
    'RerunOptions',
    'RetentionOptions',
    'RetryAfterError',
    'RetryPolicy',
    'ScheduleOptions',
    'Secrets',
    'SendEventOptions',
    'SendEventResult',
    'Session',
    'SessionBusyError',
    'SessionEvent',
    'Settled',
    'Step',
    'StepFnOptions',
    'StepOptions',
    'StepRetriesExhaustedError',
    'ToolCallError',
    'TurnOptions',
    'WaitForEventOptions',
    'WaitTimeoutError',
    'WorkersHandle',
    'aesGcmCodec',
    'agentTool',
    'clearToolResults',
    'createHarnessHost',
    'createLogger',
    'createRedisClient',
    'defineHarness',
    'durableTool',
    'evictOldest',
    'getLogRecords',
    'isContextOverflowError',
    'isDurableHarnessError',
    'isTransientModelError',
    'retryTransientErrors',
    'summarizeOldest',
    'withReplay',
    'withTimeout',
  ],
  './ops': [
    'AppRecord',
    'BudgetExceededError',
    'BulkOptions',
    'CloseOptions',
    'CloseResult',
    'CodecDecodeError',
    'CodecKeyMissingError',
    'CodecMissingError',
    'Compacted',
    'FollowOptions',
    'ForkOptions',
    'HarnessRecord',
    'HarnessRecordType',
    'HostOperations',
    'HostStats',
    'HostUsage',
    'LimitStats',
    'LogEntry',
    'LogReader',
    'LogRecord',
    'ModelUsage',
    'Question',
    'QueueRef',
    'QueueStats',
    'ReadOptions',
    'Repair',
    'ResetDone',
    'ScheduleInfo',
    'SessionSummary',
    'SessionUsage',
    'SessionsFilter',
    'SweepOptions',
    'TreeNode',
    'TurnStatus',
    'TurnSummary',
    'TurnsFilter',
    'TurnsPage',
    'UsageFigures',
    'UsageFilter',
    'principalId',
  ],
  './hooks': [
    'AesGcmCodecOptions',
    'AfterToolCallDecision',
    'AfterToolCallHook',
    'AfterToolCallInfo',
    'BeforeFinishHook',
    'Budget',
    'BudgetLeft',
    'Budgets',
    'CodecPlace',
    'CompactionInput',
    'CompactionOptions',
    'CompactionPlan',
    'CompactionReason',
    'CompactionStrategy',
    'CompactionTurn',
    'Envelope',
    'FinishAdditions',
    'FinishContext',
    'FinishMessage',
    'KeepRecentOptions',
    'LogRecordsWriter',
    'ModelError',
    'ModelErrorContext',
    'ModelErrorDecision',
    'ModelErrorPolicy',
    'RetryTransientErrorsOptions',
    'SummarizeFn',
    'SummarizeInput',
    'SummarizeOldestOptions',
    'SummarizeRequest',
  ],
  './http': ['Authorize', 'CanAccess', 'HarnessHandlerOptions', 'Principal', 'createHarnessHandler', 'toNodeListener'],
  './dashboard': [
    'DashboardOptions',
    'ServeDashboardOptions',
    'Timeline',
    'TimelineItem',
    'TimelineKind',
    'createDashboard',
    'serveDashboard',
  ],
  './mcp': ['IDEMPOTENCY_KEY_META', 'McpDurableTool', 'McpServerOptions', 'McpToolError', 'McpToolsOptions', 'createMcpServer', 'mcpTools'],
  './testing': [
    'ClusterNodeHandle',
    'CrashFinding',
    'CrashPoint',
    'CrashReport',
    'DeployProblem',
    'DeployProblemCode',
    'DeployReport',
    'ExploreCrashesOptions',
    'RedisClusterHandle',
    'RedisServerHandle',
    'RedisServerOptions',
    'ScriptEntry',
    'ScriptedResponse',
    'ScriptedToolCall',
    'SideEffect',
    'SpawnWorkerOptions',
    'StorageOptions',
    'TestCall',
    'TestHost',
    'TestHostOptions',
    'TestStep',
    'TestWorker',
    'WorkerProcess',
    'createTestHost',
    'exploreCrashes',
    'hasRedisServerBinary',
    'isRedisReachable',
    'replaySession',
    'scriptedModel',
    'spawnWorker',
    'startRedisCluster',
    'startRedisServer',
  ],
}

// the functions and members a user starts from: their TSDoc shows how (`Type.member` for a method)
const WITH_EXAMPLE = [
  'durableTool',
  'Step.do',
  'defineHarness',
  'createHarnessHost',
  'Session.prompt',
  'Session.runTool',
  'createHarnessHandler',
  'createDashboard',
  'isDurableHarnessError',
  'scriptedModel',
]

const { program, checker } = entryProgram(Object.values(ENTRIES))

function exportsOf(file: string): Array<{ name: string; symbol: ts.Symbol }> {
  const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!
  return checker
    .getExportsOfModule(module)
    .map((e) => ({ name: e.name, symbol: e.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(e) : e }))
}

const isErrorClass = (symbol: ts.Symbol) =>
  (symbol.flags & ts.SymbolFlags.Class) !== 0 &&
  checker
    .getBaseTypes(checker.getDeclaredTypeOfSymbol(symbol) as ts.InterfaceType)
    .concat(checker.getDeclaredTypeOfSymbol(symbol))
    .some(function isError(type: ts.Type): boolean {
      return type.symbol?.name === 'DurableHarnessError' || (type.isClassOrInterface() && checker.getBaseTypes(type).some(isError))
    })

describe('the public API', () => {
  it.each(Object.entries(ENTRIES))('%s exports exactly its checked-in list of names', (entry, file) => {
    const names = exportsOf(file)
      .map((e) => e.name)
      .sort()
    expect(names).toEqual(EXPORTS[entry as keyof typeof ENTRIES])
  })

  it('the root stays small: at most 70 names, at most 15 of them error classes', () => {
    const root = exportsOf(ENTRIES['.'])
    expect(root.length).toBeLessThanOrEqual(70)
    const errorClasses = root.filter((e) => isErrorClass(e.symbol)).map((e) => e.name)
    expect(errorClasses).toContain('SessionBusyError')
    expect(errorClasses.length).toBeLessThanOrEqual(15)
  })

  it.each(Object.entries(ENTRIES))('every declaration exported from %s has TSDoc', (_entry, file) => {
    const undocumented = exportsOf(file)
      .filter(({ symbol }) => symbol.getDocumentationComment(checker).length === 0)
      .map(({ name }) => name)
    expect(undocumented).toEqual([])
  })

  it('the entry points have an @example (Step.do, Session.prompt, Session.runTool included)', () => {
    const all = Object.values(ENTRIES).flatMap(exportsOf)
    const without = WITH_EXAMPLE.filter((name) => {
      const [owner, member] = name.split('.')
      const found = all.find((e) => e.name === owner)?.symbol
      const symbol = member ? found?.members?.get(ts.escapeLeadingUnderscores(member)) : found
      return !symbol?.getJsDocTags(checker).some((t) => t.name === 'example')
    })
    expect(without).toEqual([])
  })

  it('docs/errors.md names every error code and every exported error class', () => {
    const page = readFileSync('docs/errors.md', 'utf8')
    const code = exportsOf(ENTRIES['.']).find((e) => e.name === 'DurableHarnessErrorCode')!.symbol
    const codes = (checker.getDeclaredTypeOfSymbol(code) as ts.UnionType).types.map((t) => (t as ts.StringLiteralType).value)
    expect(codes.length).toBeGreaterThan(40)
    expect(codes.filter((c) => !page.includes(`\`${c}\``))).toEqual([])
    const classes = exportsOf(ENTRIES['.'])
      .filter((e) => isErrorClass(e.symbol))
      .map((e) => e.name)
    expect(classes.filter((c) => !page.includes(`\`${c}\``))).toEqual([])
  })
})
