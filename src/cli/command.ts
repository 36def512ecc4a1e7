import { parseArgs } from 'node:util'
import { UsageError } from '../errors/index.js'

/** Options every command takes (with their environment variables). */
const COMMON_OPTIONS: Record<string, OptionSpec> = {
  redis: { type: 'string', help: 'Redis URL (env REDIS_URL; default redis://127.0.0.1:6379)' },
  prefix: { type: 'string', help: 'key prefix of the host (env DH_PREFIX; default dh)' },
  module: { type: 'string', short: 'm', help: 'harness module: a path or package (env HARNESS_MODULE)' },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
}

type OptionSpec = { type: 'string' | 'boolean'; short?: string; help: string; multiple?: false }

/** One `harness` command: its usage line, what it does, its options, and how it runs. */
export interface Command {
  name: string
  /** Positional arguments, as the usage line names them. */
  args: string
  summary: string
  /** More lines for `--help`. */
  details?: string[]
  options: Record<string, OptionSpec>
  /** Positional arguments it requires (more is an error too). */
  required: number
  optional?: number
  /** The exit code, or "running" for a command that serves until a signal (worker, sweep, dashboard, log --follow). */
  run(input: CommandInput): Promise<number | 'running'>
}

export interface CommandInput {
  args: string[]
  values: Record<string, string | boolean | undefined>
}

/** The message of anything thrown: an Error's own, else the value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** A string option's value (parseArgs gives a string option a string, or nothing). */
export function stringOption(values: CommandInput['values'], name: string): string | undefined {
  const value = values[name]
  return typeof value === 'string' ? value : undefined
}

/** A served command's --port (env PORT; default `fallback`; 0 picks a free one): a UsageError for anything but a port number. */
export function portOption(values: CommandInput['values'], fallback: number): number {
  const port = Number(values.port ?? process.env.PORT ?? fallback)
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new UsageError(`--port must be a port number, not ${JSON.stringify(values.port)}.`)
  return port
}

/**
 * A served command's --host (default 127.0.0.1): an interface past this machine's loopback needs its
 * token (`tokenEnv` names its variable, `why` says what the server lets a caller do).
 */
export function listenHost(values: CommandInput['values'], token: string | undefined, tokenEnv: string, why: string): string {
  const hostname = stringOption(values, 'host') ?? '127.0.0.1'
  if (!token && !['127.0.0.1', 'localhost', '::1'].includes(hostname))
    throw new UsageError(`Listening on ${hostname} needs --token (or ${tokenEnv}): ${why}.`)
  return hostname
}

export function parseCommand(command: Command, argv: string[]): CommandInput & { help: boolean } {
  const options: Record<string, OptionSpec> = { ...COMMON_OPTIONS, ...command.options }
  let parsed
  try {
    // parseArgs takes every word after `--` as an argument: a session id may start with '-' (`-- -abc`)
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true })
  } catch (error) {
    throw new UsageError(`${parseProblem(command, argv, error)} See: harness ${command.name} --help`)
  }
  const { values } = parsed
  const help = values.help === true
  const max = command.required + (command.optional ?? 0)
  if (!help && (parsed.positionals.length < command.required || parsed.positionals.length > max)) {
    const afterDashes = argv.includes('--') ? " Every word after '--' is an argument: put the options before it." : ''
    throw new UsageError(`Usage: harness ${command.name} ${command.args}.${afterDashes} See: harness ${command.name} --help`)
  }
  return { args: parsed.positionals, values, help }
}

/** parseArgs' complaint in our words, with the way to pass a value that starts with '-'. */
function parseProblem(command: Command, argv: string[], error: unknown): string {
  const message = messageOf(error)
  const code = error instanceof Error && 'code' in error ? error.code : undefined
  const named = /'(-[^'\s]*)'/.exec(message)?.[1] ?? ''
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const word = argv.find((a) => a.startsWith(named)) ?? named
    return `Unknown option ${JSON.stringify(named)}. An argument that starts with '-' (a session id may) goes after '--': harness ${command.name} -- ${word}.`
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && /ambiguous/.test(message))
    return `Option ${named} needs a value; one that starts with '-' is written with '=': ${named}=${argv[argv.indexOf(named) + 1] ?? '-abc'}.`
  return message.replace(/\. To specify.*$/s, '.')
}

/** A whole-number option above 0 (`--limit 20`), or `fallback` when it was not given. */
export function countOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a whole number above 0, not ${JSON.stringify(value)}.`)
  return n
}

export function commandHelp(command: Command): string {
  const rows = Object.entries({ ...command.options, ...COMMON_OPTIONS }).map(([name, spec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : '    '}--${name}${spec.type === 'string' ? ' <value>' : ''}`
    return `  ${flag.padEnd(28)} ${spec.help}`
  })
  return [
    `Usage: harness ${command.name} ${command.args}`.trimEnd(),
    '',
    command.summary,
    ...(command.details ?? []),
    '',
    'Options:',
    ...rows,
    '',
  ].join('\n')
}
