import { UsageError } from '../../errors/index.js'
import type { TreeNode } from '../../harness/fanoutTree.js'
import { terminalSafe } from '../../terminalText.js'
import { Timeline } from '../../timeline/items.js'
import { countOption, type Command } from '../command.js'
import { connect, harnessesFrom, withHost } from '../connect.js'
import { jsonLine, print, table, timelineLine } from '../output.js'

export const sessions: Command = {
  name: 'sessions',
  args: '',
  summary: 'Lists recent sessions, newest first: harness, open turns, log entries, last input.',
  options: {
    open: { type: 'boolean', help: 'only sessions with an open turn' },
    harness: { type: 'string', help: 'only sessions of this harness' },
    limit: { type: 'string', help: 'at most this many (default 50)' },
    json: { type: 'boolean', help: 'one JSON object a line' },
  },
  required: 0,
  async run({ values }) {
    const filter = {
      limit: countOption(values.limit, 'limit', 50),
      ...(values.open ? { open: true } : {}),
      ...(typeof values.harness === 'string' ? { harness: values.harness } : {}),
    }
    const list = await withHost(values, false, (host) => host.sessions(filter))
    if (values.json) for (const s of list) print(jsonLine(s))
    else if (list.length === 0) print('No sessions.')
    else
      print(
        table(
          ['SESSION', 'HARNESS', 'OPEN TURNS', 'ENTRIES', 'LAST INPUT (UTC)'],
          list.map((s) => [s.sessionId, s.harness, String(s.openTurns), String(s.entries), new Date(s.lastActivity).toISOString()]),
        ),
      )
    return 0
  },
}

export const log: Command = {
  name: 'log',
  args: '<sessionId>',
  summary: "Prints a session's timeline: inputs, model calls, tool calls with their steps, sleeps, questions, answers, results, records.",
  details: [
    'With --follow it goes on printing as the session runs, until Ctrl-C; --from resumes after a cursor (from --json).',
    "With --tree it prints the session's fan-out trees instead: each call that started children, its child calls and child agents (with their sessions' own trees), and their states.",
  ],
  options: {
    follow: { type: 'boolean', short: 'f', help: 'keep printing new events' },
    tree: { type: 'boolean', help: "the session's fan-out trees instead of its timeline" },
    json: { type: 'boolean', help: 'one timeline item a line, as JSON (with its cursor)' },
    from: { type: 'string', help: 'start after this cursor' },
  },
  required: 1,
  async run({ args, values }) {
    const host = await connect(values, await harnessesFrom(values, true))
    const stop = new AbortController()
    const close = () => host.close({ timeoutMs: 2_000 })
    try {
      if (values.tree) {
        const roots = await host.tree(args[0]!)
        if (values.json) for (const root of roots) print(jsonLine(root))
        else print(roots.length === 0 ? 'No fan-out in this session.' : roots.flatMap((root) => treeLines(root, 0)).join('\n'))
        return 0
      }
      const session = await host.find(args[0]!)
      if (!session) throw new UsageError(`No session ${args[0]} of the module's harnesses (check --prefix and --module).`)
      if (values.follow) for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort())
      const timeline = new Timeline()
      const events = session.events({
        follow: values.follow === true,
        signal: stop.signal,
        ...(typeof values.from === 'string' ? { from: values.from } : {}),
      })
      for await (const event of events) {
        for (const item of timeline.push(event)) print(values.json ? jsonLine(item) : timelineLine(item))
      }
      return 0
    } finally {
      await close()
    }
  },
}

/** A tree node and its children, one line each, indented by depth: id, tool, state, and a child agent's session. */
function treeLines(node: TreeNode, indent: number): string[] {
  const pad = '  '.repeat(indent)
  const what =
    node.inputId !== undefined
      ? `turn ${node.inputId}`
      : `${node.toolCallId}  ${node.tool}  ${node.status}${node.result ? ` (${node.result})` : ''}`
  const agent = node.agent ? `  → ${node.agent.harness} ${node.agent.sessionId} ${node.agent.outcome ?? node.agent.status}` : ''
  return [
    terminalSafe(`${pad}${what}${agent}`),
    ...(node.agent?.children ?? []).flatMap((c) => treeLines(c, indent + 2)),
    ...node.children.flatMap((c) => treeLines(c, indent + 1)),
  ]
}
