// Spend (docs/spend.md): `harness usage`, host.usage's day totals as a table or JSON.
import { costliestFirst, USAGE_COLUMNS, usageCells, type HostUsage } from '../../harness/hostUsage.js'
import type { Command } from '../command.js'
import { withHost } from '../connect.js'
import { jsonLine, print, table } from '../output.js'
import { terminalSafe } from '../../terminalText.js'
import { timeOption } from './incidents.js'

type Figures = HostUsage['total']

// one word a heading, so a column splits on whitespace (CACHE-WRITE)
const HEADER = USAGE_COLUMNS.map((h) => h.toUpperCase().replace(' WRITE', '-WRITE'))
/** One table of a grouping; names are the model's or caller's (printed terminal-safe), sorted by cost. */
const grouped = (label: string, groups: Record<string, Figures>) =>
  table(
    [label, ...HEADER],
    Object.entries(groups)
      .sort(costliestFirst)
      .map(([name, f]) => [terminalSafe(name || '(none)'), ...usageCells(f)]),
  )

export const usage: Command = {
  name: 'usage',
  args: '',
  summary: 'Shows the model spend of the harnesses by day, model and principal (host.usage): tokens, cost, estimated calls.',
  details: [
    'Needs the harness module (--module or HARNESS_MODULE). Default: the last 30 days (UTC days, at most 366).',
    'Example: harness usage --since 7d --model gpt-4o-mini --json',
  ],
  options: {
    harness: { type: 'string', help: 'only this harness' },
    principal: { type: 'string', help: 'only spend asked for by this principal' },
    model: { type: 'string', help: 'only this model' },
    since: { type: 'string', help: 'from this UTC day on: 30s, 15m, 1h, 2d ago, or an ISO time' },
    until: { type: 'string', help: 'up to this UTC day (same forms; default now)' },
    json: { type: 'boolean', help: 'as one JSON object { total, byDay, byModel, byPrincipal }' },
  },
  required: 0,
  async run({ values }) {
    const since = timeOption(values.since, 'since')
    const until = timeOption(values.until, 'until')
    const text = (name: 'harness' | 'principal' | 'model') => (typeof values[name] === 'string' ? { [name]: values[name] } : {})
    const filter = {
      ...text('harness'),
      ...text('principal'),
      ...text('model'),
      ...(since === undefined ? {} : { since }),
      ...(until === undefined ? {} : { until }),
    }
    const spend = await withHost(values, true, (host) => host.usage(filter))
    if (values.json) {
      print(jsonLine(spend))
      return 0
    }
    print(table(['SPEND', ...HEADER], [['all', ...usageCells(spend.total)]]))
    if (spend.total.calls === 0) return 0
    print(`\n${grouped('MODEL', spend.byModel)}\n\n${grouped('PRINCIPAL', spend.byPrincipal)}`)
    const days = Object.fromEntries(Object.entries(spend.byDay).filter(([, f]) => f.calls > 0))
    print(
      `\n${table(
        ['DAY', ...HEADER],
        Object.entries(days).map(([day, f]) => [day, ...usageCells(f)]),
      )}`,
    )
    return 0
  },
}
