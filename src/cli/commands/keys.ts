// Encryption at rest (docs/encryption.md): `harness keys`, the key ids a session's sealed values use.
import type { Command } from '../command.js'
import { withHost } from '../connect.js'
import { jsonLine, print, table } from '../output.js'
import { terminalSafe } from '../../terminalText.js'

export const keys: Command = {
  name: 'keys',
  args: '<sessionId>',
  summary:
    "Lists the key ids a session's log sealed its values under (host.keys), with how many values each: the keys a rotation must keep.",
  details: ['A session written without a codec has none. Example: harness keys order-7 --json'],
  options: { json: { type: 'boolean', help: 'as one JSON object { <keyId>: <values> }' } },
  required: 1,
  async run({ args, values }) {
    const used = await withHost(values, false, (host) => host.keys(args[0]!))
    if (values.json) print(jsonLine(used))
    else if (Object.keys(used).length === 0) print('No sealed values in this session: it was written without a codec.')
    else
      print(
        table(
          ['KEY', 'VALUES'],
          Object.entries(used).map(([keyId, n]) => [terminalSafe(keyId), String(n)]),
        ),
      )
    return 0
  },
}
