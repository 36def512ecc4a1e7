import { LockLostError } from '../errors/index.js'
import type { LimitStore } from '../log/index.js'

/**
 * How close to its end a slot's lease is in doubt: from there on, a step or a model call starts only
 * after the lease was renewed (as attemptLock.ts does for the job lock). A healthy worker renews every
 * lease / 2, so it never gets there; a paused or blocked one does.
 */
const doubtMs = (leaseMs: number) => Math.ceil(leaseMs / 10)

/** Whose slot it is, for the error of a lost one: the session, the call's or the turn's id. */
export interface SlotOwner {
  sessionId: string
  id: string
  of: 'tool call' | 'turn'
}

/**
 * One attempt's slot of one limit key (R17), renewed every half lease while the attempt (or its code)
 * runs, like BullMQ's job lock: a holder that dies stops renewing, and its slot comes back. It knows
 * until when its lease is surely held: `confirm` is free until then, else one renewal, which fails
 * when the lease ran out (the worker was paused or blocked past it, and the room may be another
 * call's): the attempt has lost its slot and starts nothing more.
 */
export class SlotLease {
  readonly kind = 'held'
  private heldUntil: number
  private lostError: LockLostError | null = null
  private renewing: Promise<void> | undefined
  private released = false
  private readonly renewal: ReturnType<typeof setInterval>

  constructor(
    private readonly store: LimitStore,
    readonly key: string,
    private readonly holder: string,
    private readonly owner: SlotOwner,
    private readonly leaseMs: number,
    /** When the acquire that granted it was sent (our clock): the lease runs from before that. */
    sentAt: number,
    private readonly wake: (member: string) => Promise<void>,
  ) {
    this.heldUntil = sentAt + leaseMs
    this.renewal = setInterval(() => void this.renew().catch(() => {}), Math.max(1, Math.floor(leaseMs / 2)))
    this.renewal.unref()
  }

  get lost(): LockLostError | null {
    return this.lostError
  }

  /** Undefined (no promise) while the lease is surely held; throws LockLostError once it is known lost. */
  confirm(): Promise<void> | undefined {
    if (this.lostError) throw this.lostError
    if (Date.now() < this.heldUntil - doubtMs(this.leaseMs)) return undefined
    return (this.renewing ??= this.renew().finally(() => (this.renewing = undefined))).then(() => {
      if (this.lostError) throw this.lostError
    })
  }

  /** Gives the slot back (once) and wakes the waiters it was handed to. */
  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    clearInterval(this.renewal)
    const handed = await this.store.release(this.key, this.holder)
    await Promise.all(handed.map((member) => this.wake(member).catch(() => {})))
  }

  private async renew(): Promise<void> {
    if (this.lostError || this.released) return
    const sentAt = Date.now()
    if (await this.store.renew(this.key, this.holder)) {
      this.heldUntil = Math.max(this.heldUntil, sentAt + this.leaseMs)
      return
    }
    clearInterval(this.renewal)
    const { sessionId, id, of } = this.owner
    const reason = 'its lease ran out before it was renewed: the worker was paused or blocked past durability.lockMs'
    this.lostError = new LockLostError(sessionId, id, reason, { hold: 'limit slot', of })
  }
}
