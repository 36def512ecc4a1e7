// Bad input from a caller, a tool or a config: refused before anything is written.
import { DurableHarnessError, describeValue } from './base.js'

/** A session id or input id that cannot be used in Redis keys, job ids or idempotency keys. */
export class InvalidIdError extends DurableHarnessError {
  constructor(kind: 'session id' | 'input id' | 'tool call id' | 'question id' | 'event id' | 'schedule id', value: unknown) {
    super(
      'invalid_id',
      `Invalid ${kind} ${describeValue(value)}: use 1 to 200 characters from [A-Za-z0-9._-] ` +
        `(no ':', which separates the parts of an idempotency key, and no control characters).`,
    )
  }
}

/** A log cursor (stream id) that is not of the form `<ms>-<seq>` (or `<ms>`). */
export class InvalidCursorError extends DurableHarnessError {
  constructor(option: string, value: unknown) {
    super(
      'invalid_cursor',
      `Invalid ${option} ${describeValue(value)}: pass a log entry id such as "1700000000000-0" (the \`id\` of a LogEntry).`,
    )
  }
}

/** A step value, append record or answer that is not plain JSON. */
export class NotJsonError extends DurableHarnessError {
  constructor(what: string, path: string, found: string) {
    super(
      'not_json',
      `${what} must be JSON, but ${path} is ${found}. Convert it first ` +
        `(for a Date return date.toISOString(); for a Map, Object.fromEntries(map)).`,
    )
  }
}

/** A value over the configured size limit. */
export class ValueTooLargeError extends DurableHarnessError {
  constructor(what: string, size: number, limit: number) {
    super(
      'value_too_large',
      `${what} is ${size} bytes as JSON, over the limit of ${limit} bytes. ` + `Store big data elsewhere and return its id.`,
    )
  }
}

/** The same step name used twice in one tool call. */
export class DuplicateStepError extends DurableHarnessError {
  constructor(toolCallId: string, name: string) {
    super(
      'duplicate_step',
      `Step "${name}" is used twice in tool call ${toolCallId}. Give each step a name that is ` +
        `unique within the call and the same on every run, for example charge:\${orderId}.`,
    )
  }
}

/** A session secret found in a value that would be stored. */
export class SecretInValueError extends DurableHarnessError {
  constructor(what: string, secretName: string, hint = 'Read the secret outside step.do and return an id, not a token.') {
    super('secret_in_value', `${what} holds the session secret ${secretName}; the log must not keep it. ${hint}`)
  }
}

/**
 * The harness's secrets resolver failed while a prompt or a runTool input was checked for session
 * secrets (R6): nothing was logged. Names the resolver's error only by its class (its message may hold
 * the very secrets it failed to return).
 */
export class SecretsUnavailableError extends DurableHarnessError {
  constructor(what: string, errorName: string) {
    super(
      'secrets_unavailable',
      `${what} could not be checked for session secrets: the harness's secrets resolver failed (${errorName}). ` +
        'Nothing was logged; try again when the resolver answers.',
    )
  }
}

/** A record type that starts with the reserved `harness.` prefix, or has no type. */
export class ReservedRecordTypeError extends DurableHarnessError {
  constructor(type: unknown) {
    super(
      'reserved_record_type',
      `Record type ${JSON.stringify(type)} is not allowed: append records need a string type ` +
        `that does not start with "harness." (reserved), for example "app.memory".`,
    )
  }
}

/** step.ask or append used outside a durable session (e.g. plain chat()). */
export class DurableSessionRequiredError extends DurableHarnessError {
  constructor(what: string) {
    super(
      'durable_session_required',
      `${what} needs a durable session: there is no session log to hold it in plain chat(). ` +
        `Run the tool through a harness (defineHarness + createHarnessHost).`,
    )
  }
}

/** A duration or wake time that is negative, not a number, or over 365 days. */
export class InvalidDurationError extends DurableHarnessError {
  constructor(value: unknown, why: string) {
    super(
      'invalid_duration',
      `Invalid sleep ${JSON.stringify(value)}: ${why}. Use ms (a number) or '90s', '15m', '2h', '3d', up to 365 days.`,
    )
  }
}

/** A record failed its schema on write. */
export class InvalidRecordError extends DurableHarnessError {
  constructor(message: string) {
    super('invalid_record', message)
  }
}

/** Wrong options given to a public function. */
export class ConfigError extends DurableHarnessError {
  constructor(message: string) {
    super('config', message)
  }
}

/**
 * The host's shard count differs from the one the deployment's data was written with: sessions would
 * be looked for in the wrong shard. The count is fixed per deployment (docs/deploy.md).
 */
export class ShardCountError extends ConfigError {
  constructor(
    readonly prefix: string,
    readonly stored: number,
    readonly given: number,
  ) {
    super(
      `Prefix ${JSON.stringify(prefix)} was created with ${stored} shard(s), but this host was given ${given}. ` +
        `The shard count of a deployment is fixed (a session's keys and queues live in the shard its id hashes to): ` +
        `start every host, worker and sweeper with shards: ${stored} (DH_SHARDS=${stored}), or use a new prefix for a deployment with ${given} shards.`,
    )
  }
}

/**
 * The installed bullmq is not the version the local lane was verified with: the lane reads and writes
 * BullMQ's private layout (src/lane/bullmqInternals.ts), which another version may lay out otherwise.
 * Install the verified version, or turn the lane off (`createHarnessHost({ localLane: false })` or
 * DH_LOCAL_LANE=off): every job then goes through BullMQ's public path (docs/harness.md).
 */
export class UnverifiedBullmqError extends ConfigError {
  constructor(
    readonly found: string,
    readonly verified: string,
  ) {
    super(
      `createHarnessHost: the installed bullmq is ${found}; the local lane was verified with bullmq ${verified} only. ` +
        `Install bullmq ${verified}, or turn the lane off with createHarnessHost({ localLane: false }) or DH_LOCAL_LANE=off ` +
        "(every job then goes through BullMQ's public path).",
    )
  }
}

/** A bad `retention` option of `createHarnessHost` (docs/retention.md). */
export class RetentionConfigError extends ConfigError {
  constructor(message: string) {
    super(`createHarnessHost retention: ${message}`)
  }
}

/** A bad `compaction` option of `defineHarness`, or a bad option of a compaction strategy (docs/compaction.md). */
export class CompactionConfigError extends ConfigError {
  constructor(where: string, message: string) {
    super(`${where}: ${message} (docs/compaction.md)`)
  }
}

/** A `harness` CLI command used wrongly (unknown command or option, a missing or bad argument): exit code 2. */
export class UsageError extends DurableHarnessError {
  constructor(message: string) {
    super('usage', message)
  }
}
