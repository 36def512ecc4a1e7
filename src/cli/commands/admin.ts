import { UsageError } from '../../errors/index.js'
import type { Command } from '../command.js'
import { withHost } from '../connect.js'
import { terminalSafe } from '../../terminalText.js'
import { jsonLine, print, table } from '../output.js'

export const abort: Command = {
  name: 'abort',
  args: '<sessionId> <inputId>',
  summary: 'Aborts a turn: it settles as aborted, its running calls get their abort signal, its parked calls are cancelled.',
  options: {
    reason: { type: 'string', help: 'why (the turn settles with it)' },
    by: { type: 'string', help: 'who aborts (recorded; the timeline shows it)' },
  },
  required: 2,
  async run({ args, values }) {
    const aborted = await withHost(values, true, async (host) => {
      const session = await host.find(args[0]!)
      if (!session) throw new UsageError(`No session ${args[0]} of the module's harnesses.`)
      const by = typeof values.by === 'string' ? { principal: values.by } : {}
      return session.abort(args[1]!, typeof values.reason === 'string' ? values.reason : undefined, by)
    })
    const inputId = terminalSafe(args[1]!)
    print(aborted ? `Aborted ${inputId}.` : `Turn ${inputId} had settled already; nothing to abort.`)
    return aborted ? 0 : 1
  },
}

export const resume: Command = {
  name: 'resume',
  args: '<harness> | <sessionId> <inputId>',
  summary: "Resumes a paused harness (harness pause), or a turn paused by onExhausted: 'pause' (its model call is made again).",
  options: {},
  required: 1,
  optional: 1,
  async run({ args, values }) {
    if (args.length === 1) {
      await withHost(values, true, (host) => host.resume(args[0]!))
      print(`Resumed ${terminalSafe(args[0]!)}.`)
      return 0
    }
    const resumed = await withHost(values, true, async (host) => {
      const session = await host.find(args[0]!)
      if (!session) throw new UsageError(`No session ${args[0]} of the module's harnesses.`)
      return session.resume(args[1]!)
    })
    const inputId = terminalSafe(args[1]!)
    print(resumed ? `Resumed ${inputId}.` : `Turn ${inputId} is not paused (running or settled); nothing to resume.`)
    return resumed ? 0 : 1
  },
}

export const compact: Command = {
  name: 'compact',
  args: '<sessionId>',
  summary: "Compacts a session's model view now with its harness's compaction strategy (docs/compaction.md); the log keeps every entry.",
  options: { by: { type: 'string', help: 'who compacts (recorded on the compaction; the timeline shows it)' } },
  required: 1,
  async run({ args, values }) {
    const done = await withHost(values, true, async (host) => {
      const session = await host.find(args[0]!)
      if (!session) throw new UsageError(`No session ${args[0]} of the module's harnesses.`)
      return session.compact(typeof values.by === 'string' ? { principal: values.by } : {})
    })
    const sessionId = terminalSafe(args[0]!)
    print(
      done.compacted
        ? `Compacted ${sessionId}: ~${done.tokens.before} -> ~${done.tokens.after} tokens (${done.entryId}).`
        : `Nothing to compact in ${sessionId} (~${done.tokens.before} tokens).`,
    )
    return 0
  },
}

export const reset: Command = {
  name: 'reset',
  args: '<sessionId>',
  summary: 'Starts a session\'s model context over from a note (docs/compaction.md, "Reset"); the transcript keeps every entry.',
  options: {
    note: { type: 'string', help: 'what the next model call sees in place of the conversation (default nothing)' },
    by: { type: 'string', help: 'who resets (recorded on the reset; the timeline shows it)' },
  },
  required: 1,
  async run({ args, values }) {
    const done = await withHost(values, true, async (host) => {
      const session = await host.find(args[0]!)
      if (!session) throw new UsageError(`No session ${args[0]} of the module's harnesses.`)
      const note = typeof values.note === 'string' ? values.note : undefined
      return session.reset(note, typeof values.by === 'string' ? { principal: values.by } : {})
    })
    print(`Reset ${terminalSafe(args[0]!)}: ~${done.tokens.before} -> ~${done.tokens.after} tokens (${done.entryId}).`)
    return 0
  },
}

export const fork: Command = {
  name: 'fork',
  args: '<sessionId>',
  summary:
    'Makes a new session whose conversation is the session\'s up to --before or --through (docs/compaction.md, "Fork"); prints its id.',
  options: {
    before: { type: 'string', help: 'copy the turns before this input (not it)' },
    through: { type: 'string', help: 'copy the turns through this input (it included)' },
    as: { type: 'string', help: "the new session's id (default fork-<uuid>)" },
    by: { type: 'string', help: 'who forks (on the harness.fork record; the timeline shows it)' },
  },
  required: 1,
  async run({ args, values }) {
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
    const options = Object.fromEntries(
      Object.entries({
        before: str(values.before),
        through: str(values.through),
        sessionId: str(values.as),
        principal: str(values.by),
      }).filter(([, v]) => v !== undefined),
    )
    const id = await withHost(values, true, (host) => host.fork(args[0]!, options))
    print(`Forked ${terminalSafe(args[0]!)} as ${terminalSafe(id)}.`)
    return 0
  },
}

export const stats: Command = {
  name: 'stats',
  args: '',
  summary: 'Shows queue counts per shard, parked calls, open turns, calls and questions, and sweeper recoveries by reason.',
  details: ['Queue counts need the harness module (--module or HARNESS_MODULE); the rest does not.'],
  options: { json: { type: 'boolean', help: 'as one JSON object' } },
  required: 0,
  async run({ values }) {
    const s = await withHost(values, false, (host) => host.stats())
    if (values.json) {
      print(jsonLine(s))
      return 0
    }
    if (s.queues.length > 0)
      print(
        table(
          ['SHARD', 'QUEUE', 'WAITING', 'ACTIVE', 'DELAYED', 'WAITING-CHILDREN', 'FAILED', 'COMPLETED'],
          s.queues.map((q) => [
            String(q.shard),
            q.name,
            ...[
              q.counts.waiting + q.counts.prioritized,
              q.counts.active,
              q.counts.delayed,
              q.counts['waiting-children'],
              q.counts.failed,
              q.counts.completed,
            ].map(String),
          ]),
        ),
      )
    else print('(no harness module: queue counts skipped)')
    print('')
    print(`parked calls    ${s.parkedCalls}`)
    print(`open turns      ${s.openTurns}`)
    print(`open calls      ${s.openCalls}`)
    print(`open questions  ${s.openQuestions}`)
    const recoveries = Object.entries(s.recoveries)
    print(`recoveries      ${recoveries.length ? recoveries.map(([reason, n]) => `${terminalSafe(reason)}=${n}`).join(' ') : 0}`)
    // flow-control limits (R17): a key is the key function's value, hostile as printed
    if (s.limits.length > 0) {
      print('')
      print(
        table(
          ['HARNESS', 'LIMIT', 'KEY', 'RUNNING', 'WAITING', 'RATE-USED'],
          s.limits.map((l) => [
            terminalSafe(l.harness),
            terminalSafe(l.limit),
            terminalSafe(l.key || '-'),
            String(l.running),
            String(l.waiting),
            String(l.rateUsed),
          ]),
        ),
      )
    }
    return 0
  },
}
