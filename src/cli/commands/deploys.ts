import { checkDeploy } from '../../deploys/index.js'
import { stringOption, type Command } from '../command.js'
import { loadHostModule } from '../loadHarnesses.js'
import { terminalSafe } from '../../terminalText.js'
import { jsonLine, paint, print } from '../output.js'
import { redisFromEnv } from '../processEnv.js'

export const checkDeployCommand: Command = {
  name: 'check-deploy',
  args: '<new harness module>',
  summary:
    'Checks the open, queued and parked calls and open questions in Redis against a new harness module; exit 1 lists every one it would break.',
  details: [
    'For each call not landed: its tool exists (or is a legacy tool of a call begun under an older version), its input passes the',
    "new input schema, and a dry replay of the new code (stored steps answered from storage, no step's fn runs) reaches every",
    'stored step and accepts the stored answers. Nothing is written. See docs/deploys.md.',
  ],
  options: { json: { type: 'boolean', help: 'one problem a line, as JSON, then a summary line' } },
  required: 1,
  async run({ args, values }) {
    // the module's codec (or DH_CODEC_KEYS) opens what the sessions sealed
    const { harnesses, codec } = await loadHostModule(args[0])
    const report = await checkDeploy({
      redis: typeof values.redis === 'string' ? values.redis : redisFromEnv().redis,
      prefix: stringOption(values, 'prefix') ?? process.env.DH_PREFIX ?? 'dh',
      harnesses,
      ...(codec ? { codec } : {}),
    })
    const versions = harnesses.map((h) => `${h.name}@${h.version}`).join(', ')
    if (values.json) {
      for (const problem of report.problems) print(jsonLine(problem))
      print(jsonLine({ sessions: report.sessions, calls: report.calls, problems: report.problems.length, versions }))
    } else {
      for (const p of report.problems) {
        const where = [p.sessionId, p.toolCallId, p.tool].filter(Boolean).map((s) => terminalSafe(s!))
        print(`${paint('red', 'breaks')} ${where.join(' ')}: ${terminalSafe(p.message)}`)
      }
      const checked = `${report.calls} open call(s) in ${report.sessions} session(s) against ${terminalSafe(versions)}`
      print(report.problems.length === 0 ? `ok: ${checked}; nothing breaks.` : `${report.problems.length} problem(s): ${checked}.`)
    }
    return report.problems.length === 0 ? 0 : 1
  },
}
