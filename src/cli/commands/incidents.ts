// Operating incidents (issue 27): turns by status and time, rerun one, replay or cancel many, pause a harness.
import { UsageError } from '../../errors/index.js'
import type { HarnessHost } from '../../harness/host.js'
import { countOption, type Command } from '../command.js'
import { withHost } from '../connect.js'
import { terminalSafe } from '../../terminalText.js'
import { jsonLine, print, table } from '../output.js'

type TurnsFilter = NonNullable<Parameters<HarnessHost['turns']>[0]>
type TurnStatus = NonNullable<TurnsFilter['status']>

// a Record, so the compiler says when a status is added and not listed here
const STATUSES: Record<TurnStatus, true> = { open: true, completed: true, failed: true, aborted: true }
const isTurnStatus = (value: string): value is TurnStatus => Object.hasOwn(STATUSES, value)

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `--since 1h` (30s, 15m, 2d: that long ago) or an ISO time (`2026-12-01T14:00:00Z`), as ms since the epoch. */
export function timeOption(value: unknown, name: string, now = Date.now()): number | undefined {
  if (value === undefined) return undefined
  const text = String(value)
  const ago = /^(\d+)([smhd])$/.exec(text)
  if (ago) return now - Number(ago[1]) * UNITS[ago[2]!]!
  const at = Date.parse(text)
  if (/^\d{4}-\d{2}-\d{2}/.test(text) && Number.isFinite(at)) return at
  throw new UsageError(`--${name} takes a time ago (30s, 15m, 1h, 2d) or an ISO time (2026-12-01T14:00:00Z), not ${JSON.stringify(text)}.`)
}

const FILTER_OPTIONS = {
  status: { type: 'string', help: 'open, completed, failed or aborted' },
  harness: { type: 'string', help: 'only turns of this harness' },
  since: { type: 'string', help: 'entered the status since: 30s, 15m, 1h, 2d ago, or an ISO time' },
  until: { type: 'string', help: 'entered the status until then (same forms)' },
  tag: { type: 'string', help: 'only turns prompted with this metadata tag: key=value' },
  tool: { type: 'string', help: 'only turns whose model called this tool' },
} as const

function filterOf(values: Record<string, string | boolean | undefined>, status?: TurnStatus): TurnsFilter {
  const since = timeOption(values.since, 'since')
  const until = timeOption(values.until, 'until')
  const tag = typeof values.tag === 'string' ? /^([^=]+)=(.*)$/.exec(values.tag) : undefined
  if (values.tag !== undefined && !tag) throw new UsageError(`--tag takes key=value, not ${JSON.stringify(values.tag)}.`)
  return {
    ...statusOf(values.status, status),
    ...(typeof values.harness === 'string' ? { harness: values.harness } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(tag ? { metadata: { [tag[1]!]: tag[2]! } } : {}),
    ...(typeof values.tool === 'string' ? { tool: values.tool } : {}),
  }
}

/** `--status`, else the command's own status; a word that is no status is a usage error. */
function statusOf(given: unknown, fallback: TurnStatus | undefined): { status?: TurnStatus } {
  if (typeof given !== 'string') return fallback ? { status: fallback } : {}
  if (!isTurnStatus(given)) throw new UsageError(`--status takes ${Object.keys(STATUSES).join(', ')}, not ${JSON.stringify(given)}.`)
  return { status: given }
}

export const turns: Command = {
  name: 'turns',
  args: '',
  summary: 'Lists turns by status, harness, time, tag and tool, newest first (the turns index: a page costs what it shows).',
  details: ['Example: harness turns --status failed --since 1h. --cursor goes on from where the last page (--json) stopped.'],
  options: {
    ...FILTER_OPTIONS,
    limit: { type: 'string', help: 'at most this many (default 50)' },
    cursor: { type: 'string', help: 'the next page: the cursor a --json page printed last' },
    json: { type: 'boolean', help: 'one JSON object a line, then {"cursor": ...} when there is more' },
  },
  required: 0,
  async run({ values }) {
    const filter = { ...filterOf(values), limit: countOption(values.limit, 'limit', 50) }
    const page = await withHost(values, true, (host) =>
      host.turns({ ...filter, ...(typeof values.cursor === 'string' ? { cursor: values.cursor } : {}) }),
    )
    if (values.json) {
      for (const t of page.items) print(jsonLine(t))
      if (page.cursor) print(jsonLine({ cursor: page.cursor }))
    } else if (page.items.length === 0) print('No turns.')
    else {
      const rows = page.items.map((t) => [
        t.sessionId,
        t.inputId,
        t.harness,
        t.status,
        new Date(t.at).toISOString(),
        t.principal ?? '',
        t.text.slice(0, 60),
      ])
      print(table(['SESSION', 'INPUT', 'HARNESS', 'STATUS', 'SINCE (UTC)', 'BY', 'PROMPT'], rows))
      if (page.cursor) print(`more: --cursor ${page.cursor}`)
    }
    return 0
  },
}

export const rerun: Command = {
  name: 'rerun',
  args: '<sessionId> <inputId>',
  summary: 'Runs a failed or aborted turn again: kept call results stay kept, failed calls and the model go on.',
  details: [
    "A replay 'never' call that was interrupted, aborted, timed out or cancelled after its tool began keeps its error (its",
    'side effect may have happened). --again runs such calls again: name them only when you know their side effect did not happen.',
  ],
  options: {
    id: { type: 'string', help: 'a rerun id: the same id again does nothing' },
    by: { type: 'string', help: 'who reruns (recorded)' },
    again: { type: 'string', help: 'tool call ids (comma-separated) of the turn to run again although kept (recorded)' },
  },
  required: 2,
  async run({ args, values }) {
    const done = await withHost(values, true, async (host) => {
      const session = await host.find(args[0]!)
      if (!session) throw new UsageError(`No session ${terminalSafe(args[0]!)} of the module's harnesses.`)
      return session.rerun(args[1]!, {
        ...(typeof values.id === 'string' ? { rerunId: values.id } : {}),
        ...(typeof values.by === 'string' ? { principal: values.by } : {}),
        ...(typeof values.again === 'string' ? { again: values.again.split(',').filter((id) => id !== '') } : {}),
      })
    })
    const inputId = terminalSafe(args[1]!)
    print(done ? `Rerunning ${inputId}.` : `Turn ${inputId} is not failed or aborted (open or completed); nothing to rerun.`)
    return done ? 0 : 1
  },
}

/** `harness replay` / `harness cancel`: a bulk action by filter, with progress on stderr. */
function bulk(
  name: 'replay' | 'cancel',
  summary: string,
  act: (host: HarnessHost, filter: TurnsFilter, by?: string) => Promise<{ count: number }>,
): Command {
  return {
    name,
    args: '',
    summary,
    options: { ...FILTER_OPTIONS, by: { type: 'string', help: 'who does it (recorded on each turn)' } },
    required: 0,
    async run({ values }) {
      if (values.status === undefined && values.since === undefined && values.tag === undefined && values.tool === undefined)
        throw new UsageError(
          `harness ${name} needs a filter (--status, --since, --tag or --tool), so it never acts on every turn by accident.`,
        )
      const { count } = await withHost(values, true, (host) =>
        act(host, filterOf(values), typeof values.by === 'string' ? values.by : undefined),
      )
      print(`${name === 'replay' ? 'Reran' : 'Cancelled'} ${count} turn${count === 1 ? '' : 's'}.`)
      return 0
    },
  }
}

const progress = ({ done, seen }: { done: number; seen: number }) => process.stderr.write(`… ${done} of ${seen}\n`)

export const replay = bulk(
  'replay',
  'Reruns every failed (or --status aborted) turn the filter finds, in batches; kept results stay kept.',
  (host, filter, by) => host.replay(filter, { onProgress: progress, ...(by ? { principal: by } : {}) }),
)

export const cancel = bulk(
  'cancel',
  'Aborts every open turn the filter finds (or ends the parked calls of --status failed|aborted turns).',
  (host, filter, by) => host.cancel(filter, { onProgress: progress, ...(by ? { principal: by } : {}) }),
)

export const pause: Command = {
  name: 'pause',
  args: '<harness>',
  summary: 'Pauses a harness in every shard: new turns and calls wait (queued), running calls finish. harness resume <harness> goes on.',
  options: {},
  required: 1,
  async run({ args, values }) {
    await withHost(values, true, (host) => host.pause(args[0]!))
    print(`Paused ${terminalSafe(args[0]!)}.`)
    return 0
  },
}
