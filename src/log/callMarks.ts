import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { RedisClient } from './client.js'
import { callMarkKey } from './keys.js'

/** How long after its request a marked job may skip its begin; later it begins as any job does. */
export const MARK_TRUST_MS = 10 * 60_000

/**
 * Marks of runTool calls begun with their request (requestCall.lua), so that the job's first
 * delivery can skip its own begin (one script less a call, issue 24) and still run only its logged
 * call (issue 21): the mark is an HMAC of the call's ids, its fingerprint (tool and input) and the
 * request's time under the deployment's own random key, which lives in Redis and never in a job. A
 * job whose data was edited, copied under other ids, or is older than MARK_TRUST_MS fails the check
 * and begins as logged (beginCall checks the fingerprint against the log).
 */
export class CallMarks {
  constructor(private readonly key: Buffer) {}

  /** The mark of a call requested at `at` (ms). */
  sign(sessionId: string, toolCallId: string, fingerprint: string, at: number): string {
    return `${at}.${this.mac(sessionId, toolCallId, fingerprint, at)}`
  }

  /** True for the mark `sign` made for these ids and fingerprint, within MARK_TRUST_MS of `now`. */
  verify(sessionId: string, toolCallId: string, fingerprint: string, mark: unknown, now: number): boolean {
    if (typeof mark !== 'string') return false
    const dot = mark.indexOf('.')
    const at = Number(mark.slice(0, dot))
    if (dot < 1 || !Number.isSafeInteger(at) || now - at > MARK_TRUST_MS || at - now > MARK_TRUST_MS) return false
    const given = Buffer.from(mark.slice(dot + 1))
    const expected = Buffer.from(this.mac(sessionId, toolCallId, fingerprint, at))
    return given.length === expected.length && timingSafeEqual(given, expected)
  }

  private mac(sessionId: string, toolCallId: string, fingerprint: string, at: number): string {
    return createHmac('sha256', this.key).update(`${sessionId}\0${toolCallId}\0${fingerprint}\0${at}`).digest('base64url').slice(0, 22)
  }
}

/** The deployment's mark key: the first host to ask writes a random one (`SET NX`), every later one reads it. */
export async function claimCallMarks(redis: RedisClient, prefix: string): Promise<CallMarks> {
  const key = callMarkKey(prefix)
  await redis.set(key, randomBytes(32).toString('base64'), 'NX')
  const stored = await redis.get(key)
  if (stored === null) throw new Error(`${key} was removed while it was read`)
  return new CallMarks(Buffer.from(stored, 'base64'))
}
