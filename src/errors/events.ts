import { DurableHarnessError, causeText } from './base.js'

/** Thrown inside the tool: `step.waitForEvent` reached its timeout and no event came. */
export class EventTimeoutError extends DurableHarnessError {
  constructor(
    readonly event: string,
    readonly key: string,
    readonly timedOutAt: string,
  ) {
    super(
      'event_timeout',
      `No event "${event}" with key ${JSON.stringify(key)} arrived before ${timedOutAt} (step.waitForEvent timeout). ` +
        'Catch it in the tool to handle the missing event, or wait longer.',
    )
  }
}

/**
 * An event name or key that cannot address an event: not a string, empty, over 1,000 characters, or
 * with a lone UTF-16 surrogate (two such strings would hash to one address). From `host.sendEvent`,
 * `POST control { op: 'event' }`, `harness event` and `step.waitForEvent`; nothing was sent or waited.
 */
export class InvalidEventAddressError extends DurableHarnessError {
  constructor(
    readonly where: string,
    readonly part: 'event name' | 'key',
    why: string,
  ) {
    super(
      'invalid_event_address',
      `${where}: the ${part} ${why}; an event name and a key are each 1 to 1,000 characters of well-formed text. ` +
        (part === 'key' ? 'Use a short correlation id (an order id, or a hash of a long value).' : 'Use a short event name.'),
    )
  }
}

/** `host.sendEvent` (or `POST control { op: 'event' }`): the payload was refused by a waiting call's schema; nothing was stored, nothing woken. */
export class InvalidEventPayloadError extends DurableHarnessError {
  constructor(
    readonly event: string,
    readonly key: string,
    readonly issues: string,
  ) {
    super(
      'invalid_event_payload',
      `The payload of event "${event}" (key ${JSON.stringify(key)}) was refused by a waiting call's schema: ${issues}. ` +
        'Nothing was stored and no call was woken; send a payload the schema accepts.',
    )
  }
}

/**
 * `host.schedule` with options that cannot make a schedule (no interval, both `every` and `cron`, a
 * bad cron pattern, an unknown harness), or with a prompt every tick would be refused: then `cause`
 * is the prompt's own error (`value_too_large`, `secret_in_value`, ...).
 */
export class InvalidScheduleError extends DurableHarnessError {
  constructor(id: string, problem: string, options?: { cause?: unknown }) {
    const why = options && 'cause' in options ? `${problem}: ${causeText(options.cause)}` : problem
    super('invalid_schedule', `Schedule ${JSON.stringify(id)}: ${why}`, options)
  }
}
