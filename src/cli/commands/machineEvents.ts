import { UsageError } from '../../errors/index.js'
import { messageOf, type Command } from '../command.js'
import { withHost } from '../connect.js'
import { jsonLine, print, table } from '../output.js'
import { terminalSafe } from '../../terminalText.js'

function parsePayload(text: string | undefined): unknown {
  if (text === undefined) return null
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UsageError(`The payload is not JSON (${messageOf(error)}); quote it for the shell: '{"amount":42}'.`)
  }
}

export const event: Command = {
  name: 'event',
  args: '<event> <key> [json payload]',
  summary: 'Sends a machine event: wakes every call waiting on (event, key) in step.waitForEvent, or keeps it for the first wait.',
  options: {
    id: { type: 'string', help: 'event id: a second send with the same id does nothing' },
    session: { type: 'string', help: "for this session's waits with scope: 'session' only" },
  },
  required: 2,
  optional: 1,
  async run({ args, values }) {
    const payload = parsePayload(args[2])
    const id = typeof values.id === 'string' ? values.id : undefined
    const sessionId = typeof values.session === 'string' ? values.session : undefined
    const sent = await withHost(values, false, (host) =>
      host.sendEvent({
        event: args[0]!,
        key: args[1]!,
        payload,
        ...(id === undefined ? {} : { id }),
        ...(sessionId === undefined ? {} : { sessionId }),
      }),
    )
    const what = `${terminalSafe(args[0]!)} ${terminalSafe(JSON.stringify(args[1]!))}`
    if (sent.status === 'stored') print(`Kept ${what}: no call waits for it yet; the first wait takes it.`)
    else if (sent.status === 'duplicate')
      print(`Event id ${terminalSafe(id ?? '')} was sent before; nothing done (${sent.calls} call(s) woken again).`)
    else print(`Delivered ${what}: ${sent.calls} call(s) woken, ${sent.turns} turn(s) cancelled.`)
    return 0
  },
}

export const schedules: Command = {
  name: 'schedules',
  args: '',
  summary: 'Lists the schedules (host.schedule): interval or cron, the session they prompt, the next tick and what the ticks did.',
  options: { json: { type: 'boolean', help: 'one schedule a line, as JSON' } },
  required: 0,
  async run({ values }) {
    const list = await withHost(values, false, (host) => host.schedules())
    if (values.json) for (const s of list) print(jsonLine(s))
    else if (list.length === 0) print('No schedules.')
    else
      print(
        table(
          ['SCHEDULE', 'HARNESS', 'WHEN', 'SESSION', 'OVERLAP', 'NEXT', 'PROMPTED', 'SKIPPED', 'LAST ERROR', 'PROMPT'],
          list.map((s) => [
            s.id,
            s.harness,
            s.every !== undefined ? `every ${s.every} ms` : `${s.cron} ${s.tz ?? 'UTC'}`,
            s.sessionId,
            s.overlap,
            s.next ? new Date(s.next).toISOString() : '-',
            String(s.prompted),
            String(s.skipped),
            s.lastError ? `${new Date(s.lastError.at).toISOString()} ${s.lastError.message}` : '-',
            s.prompt,
          ]),
        ),
      )
    return 0
  },
}
