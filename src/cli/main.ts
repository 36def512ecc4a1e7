// The `harness` CLI (package.json `bin`, through bin/harness.js): one command a module in commands/.
import { redactCredentials } from '../credentials.js'
import { DurableHarnessError, UsageError } from '../errors/index.js'
import { commandHelp, messageOf, parseCommand, type Command } from './command.js'
import { abort, compact, fork, reset, resume, stats } from './commands/admin.js'
import { usage } from './commands/usage.js'
import { keys } from './commands/keys.js'
import { dashboard } from './commands/dashboard.js'
import { mcp } from './commands/mcp.js'
import { checkDeployCommand } from './commands/deploys.js'
import { worker, sweep } from './commands/processes.js'
import { answer, approve, deny, questions } from './commands/questions.js'
import { event, schedules } from './commands/machineEvents.js'
import { log, sessions } from './commands/sessions.js'
import { cancel, pause, replay, rerun, turns } from './commands/incidents.js'
import { terminalSafe } from '../terminalText.js'
import { paint } from './output.js'

const COMMANDS: Command[] = [
  worker,
  sweep,
  sessions,
  log,
  questions,
  answer,
  approve,
  deny,
  abort,
  resume,
  compact,
  reset,
  fork,
  stats,
  usage,
  keys,
  event,
  schedules,
  dashboard,
  mcp,
  turns,
  rerun,
  replay,
  cancel,
  pause,
  checkDeployCommand,
]

function overview(): string {
  return [
    'Usage: harness <command> [options]',
    '',
    'Operate durable-harness: run workers, see sessions and open work, answer and approve, serve the dashboard.',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${`${c.name} ${c.args}`.padEnd(30)} ${c.summary}`),
    '',
    'Every command takes --redis (REDIS_URL, or REDIS_CLUSTER_NODES), --prefix (DH_PREFIX) and --module (HARNESS_MODULE);',
    'DH_SHARDS names the shard count, as for the workers.',
    'harness <command> --help shows its options. Exit codes: 0 done, 1 failed, 2 wrong usage.',
    '',
  ].join('\n')
}

/** Runs one command line; resolves with its exit code, or 'running' for a command that serves. */
export async function main(argv: string[]): Promise<number | 'running'> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(overview())
    return name === undefined ? 2 : 0
  }
  const command = COMMANDS.find((c) => c.name === name)
  try {
    if (!command)
      throw new UsageError(`Unknown command "${name}". Commands: ${COMMANDS.map((c) => c.name).join(', ')}. See: harness --help`)
    const input = parseCommand(command, rest)
    if (input.help) {
      process.stdout.write(commandHelp(command))
      return 0
    }
    return await command.run(input)
  } catch (error) {
    const usage = error instanceof UsageError
    const message = error instanceof DurableHarnessError ? error.message : `harness ${name} failed: ${messageOf(error)}`
    process.stderr.write(`${paint('red', 'error')}: ${terminalSafe(redactCredentials(message))}\n`)
    return usage ? 2 : 1
  }
}

const code = await main(process.argv.slice(2))
// exit once stdout has taken everything: to a socket (a spawning process's stdio) writes are
// asynchronous, and an exit right away cut a long `turns --json` short
if (code !== 'running') process.stdout.write('', () => process.exit(code))
