import { pino, type Logger, type LoggerOptions } from 'pino'
import { serializeError } from './credentials.js'

/**
 * Structured logs: pretty in a terminal, JSON lines otherwise. Every line about a call carries
 * sessionId, toolCallId and attempt (the queue layer binds them with child loggers).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info'
  // errors are redacted: an ioredis error can carry the Redis password
  options = { ...options, serializers: { ...options.serializers, err: serializeError } }
  if (process.stdout.isTTY && !process.env.LOG_JSON) {
    return pino({ ...options, level, transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } } })
  }
  return pino({ ...options, level })
}

export type { Logger }
