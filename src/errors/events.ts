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
