// The CLI's arguments (src/cli/command.ts), parsed in this process: a session id that starts with '-'
// goes after '--' or is written --session=<id>, and each misuse gets a UsageError that says how. The
// bin's side of a UsageError (exit 2, one `error:` line on stderr) and the same addressing against a
// real session are tested once in processes of their own (test/integration/cli.test.ts).
import { describe, expect, it } from 'vitest'
import { parseCommand } from '../../src/cli/command.js'
import { event } from '../../src/cli/commands/machineEvents.js'
import { approve } from '../../src/cli/commands/questions.js'
import { log } from '../../src/cli/commands/sessions.js'
import { UsageError } from '../../src/errors/index.js'

describe('harness command arguments', () => {
  it("a session id that starts with '-' is an argument after '--', options before it; without '--' (or '=' for an option's value) the error says how", () => {
    expect(() => parseCommand(log, ['-dash'])).toThrow(UsageError)
    expect(() => parseCommand(log, ['-dash'])).toThrow("goes after '--': harness log -- -dash.")
    expect(parseCommand(log, ['--', '-dash'])).toMatchObject({ args: ['-dash'], help: false })
    expect(parseCommand(log, ['--json', '--', '-dash'])).toMatchObject({ args: ['-dash'], values: { json: true } })
    expect(() => parseCommand(log, ['--', '-dash', '--json'])).toThrow("Every word after '--' is an argument: put the options before it.")
    expect(() => parseCommand(approve, ['call-0-0', '--session', '-dash-refund'])).toThrow("written with '=': --session=-dash-refund.")
    expect(parseCommand(approve, ['call-0-0', '--session=-dash-refund'])).toMatchObject({
      args: ['call-0-0'],
      values: { session: '-dash-refund' },
    })
  })

  it("event's payload that is not JSON is a UsageError that says to quote it, before any connection", async () => {
    const input = parseCommand(event, ['payment.settled', 'cli-order', '{not json', '--redis', 'redis://127.0.0.1:1'])
    await expect(event.run(input)).rejects.toThrow(UsageError)
    await expect(event.run(input)).rejects.toThrow('The payload is not JSON')
  })
})
