import { createRequire } from 'node:module'
import { pino, type Bindings, type Logger, type LoggerOptions } from 'pino'
import { serializeError } from './credentials.js'
import { jsonText, prettySafeLine } from './terminalText.js'

/** pino-pretty is optional (not a dependency): without it, a terminal gets JSON lines too. */
function hasPinoPretty(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty')
    return true
  } catch {
    return false
  }
}

/**
 * Structured logs: pretty in a terminal when pino-pretty is installed, JSON lines otherwise. Every line about a call carries
 * sessionId, toolCallId and attempt (the queue layer binds them with child loggers).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info'
  // errors are redacted: an ioredis error can carry the Redis password
  options = { ...options, serializers: { ...options.serializers, err: serializeError } }
  // log lines carry values models and callers chose (error messages, ids, inputs): none reaches a
  // terminal raw. JSON lines escape what JSON.stringify leaves raw; the pretty printer decodes JSON
  // escapes, so its lines get every string made visible first.
  if (process.stdout.isTTY && !process.env.LOG_JSON && hasPinoPretty()) {
    const transport = { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } }
    return pino({ ...options, level, hooks: { ...options.hooks, streamWrite: prettySafeLine }, transport })
  }
  return pino({ ...options, level, hooks: { ...options.hooks, streamWrite: options.hooks?.streamWrite ?? jsonText } })
}

/** The levels a per-call logger writes at. */
export type LineLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>

/**
 * A child logger made on its first line at an enabled level: a call or turn whose lines are all below
 * the level (per-call lines are debug) costs no child and no serialized bindings.
 */
export function lazyChild(logger: Logger, bindings: Bindings): LineLogger {
  return new LazyChild(logger, bindings)
}

// a class, not four closures: one is made for every tool call and turn attempt (its methods are
// called on it: `logger.debug(…)`, never passed on alone)
class LazyChild implements LineLogger {
  private child: Logger | undefined
  constructor(
    private readonly logger: Logger,
    private readonly bindings: Bindings,
  ) {}
  // the arguments go through as they came (pino reads an object first, then a message and its format args)
  debug(...args: LogArgs): void {
    this.line('debug', args)
  }
  info(...args: LogArgs): void {
    this.line('info', args)
  }
  warn(...args: LogArgs): void {
    this.line('warn', args)
  }
  error(...args: LogArgs): void {
    this.line('error', args)
  }

  private line(level: keyof LineLogger, args: LogArgs): void {
    if (!this.logger.isLevelEnabled(level)) return
    this.child ??= this.logger.child(this.bindings)
    this.child[level](...args)
  }
}

type LogArgs = [obj: unknown, msg?: string, ...rest: unknown[]]

export type { Logger }
