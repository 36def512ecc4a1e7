import { createHash } from 'node:crypto'
import { StorageError } from '../errors/index.js'
import type { RedisClient } from './client.js'
import { runScript, scripts } from './commands/index.js'
import { eventAddressId, type EventAddress } from './eventAddress.js'
import { openValue, sealValue, type CodecPlace, type PayloadCodec } from '../codec/index.js'
import { jsonStartsWithNul } from './sealedRecords.js'

export type { EventAddress } from './eventAddress.js'

/** How long an event no call waits for yet is kept, and how long a seen event id is remembered (24 h). */
export const DEFAULT_EVENT_RETENTION_MS = 24 * 3_600_000
/** How long past its timeout a wait's entries are kept (its call wakes at the timeout and removes them; this is for one that never does). */
const WAITER_GRACE_MS = 24 * 3_600_000

/** A call or a cancelOn turn waiting on an (event, key), as the sender sees it. */
export interface EventWaiter {
  kind: 'call' | 'turn'
  sessionId: string
  /** The tool call id of a call, the input id of a turn. */
  id: string
  harness: string
}

/** What delivering an event did: woke these waiters, kept the event for a later wait, or nothing (a seen id). */
export type Delivery =
  | { status: 'delivered' | 'duplicate'; waiters: EventWaiter[] }
  | { status: 'stored' }
  | { status: 'check'; schemas: Array<{ member: string; schema: unknown }> }

export type AwaitReply =
  | { status: 'event'; payload: unknown }
  | { status: 'timeout' }
  | { status: 'waiting' }
  | { status: 'check'; events: Array<{ uid: string; payload: unknown }> }

/** How long a turn's cancelOn entry stays: as long as the longest wait of its calls. */
const TURN_WATCH_MS = 365 * 86_400_000

/** How long an operation here retries what Redis refused: each is idempotent when re-sent (a delivery under one uid, a consume by one waiter). */
const RETRY_MS = 10_000

/** Runs one idempotent operation, with backoff for RETRY_MS; what Redis still throws becomes a StorageError. */
async function guarded<T>(operation: string, sessionId: string, run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + RETRY_MS
  for (let delay = 20; ; delay = Math.min(delay * 2, 1_000)) {
    try {
      return await run()
    } catch (error) {
      if (Date.now() + delay > deadline) throw new StorageError(operation, sessionId, error)
      await new Promise((resolve) => setTimeout(resolve, delay))
    }
  }
}

/** The member of a call's wait: a step of one call waits on one (event, key) at a time. */
export function callWaitMember(sessionId: string, toolCallId: string, step: string): string {
  return `c|${sessionId}|${toolCallId}|${step}`
}

function parseWaiter(member: string, harness: string): EventWaiter {
  const [kind, sessionId = '', id = ''] = member.split('|')
  return { kind: kind === 't' ? 'turn' : 'call', sessionId, id, harness }
}

function pairs(list: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (let i = 0; i + 1 < list.length; i += 2) out.push([list[i]!, list[i + 1]!])
  return out
}

/**
 * The event index: one hash an (event, key), under its own hash tag (a hash of the pair), so the
 * waiter's registration and the sender's delivery are one script on one slot of a Cluster, whatever
 * the shards of the waiting sessions (commands/includes/eventHash.lua has its fields). Waking each
 * waiting call is then the sender's step on the call's own shard (a job promote), which the call's
 * own wake-up at its timeout and a resend repair if the sender dies between.
 */
/** Where an event's payload is bound: the address (event, key, session of a scoped one) it was sent to. */
const payloadPlace = (addressId: string): CodecPlace => ({ sessionId: '', type: 'harness.event', field: addressId })

export class EventWaits {
  constructor(
    readonly redis: RedisClient,
    readonly prefix: string,
    /** The sender's: how long a kept event and a seen id stay (a waiter needs none). */
    readonly retentionMs: number = DEFAULT_EVENT_RETENTION_MS,
    /** Seals a payload for its address's hash and opens it for the call that takes it (docs/encryption.md). */
    readonly codec?: PayloadCodec,
  ) {}

  /** A payload (JSON text) as the address's hash keeps it: sealed, bound to the address it was sent to. */
  private async sealedPayload(addressId: string, json: string): Promise<string> {
    if (!this.codec && !jsonStartsWithNul(json)) return json
    return JSON.stringify(await sealValue(this.codec, JSON.parse(json), payloadPlace(addressId)))
  }

  /** A payload from an address's hash as it was sent. */
  private async openedPayload(addressId: string, json: string): Promise<unknown> {
    const stored: unknown = JSON.parse(json)
    return jsonStartsWithNul(json) ? openValue(this.codec, stored, payloadPlace(addressId)) : stored
  }

  /**
   * The JSON Schemas of the waiting calls, one field a schema by its digest: a waiter's entry names
   * its schema (`#<digest>`) instead of holding it, so the entry stays under Redis's 64 B listpack
   * value and the hash of one (event, key) is a listpack (208 B a wait instead of 412 B, docs/decisions/event-wait-memory.md).
   * As many fields as the code has distinct schemas; never expires.
   */
  get schemasKey(): string {
    return `${this.prefix}:ev-schemas`
  }

  /** The hash of one (event, key) (of one session, for a scoped wait): its id is one-to-one (eventAddress.ts). */
  keyOf(address: EventAddress): string {
    return this.keyOfId(eventAddressId(address))
  }

  /** The hash of an address by its id (a wait's stored `ev`: the address it registered under). */
  keyOfId(id: string): string {
    return `${this.prefix}:{ev-${id}}`
  }

  /** A call's wait asks once: its delivered event, its timeout, a kept event its schema accepts, or it waits. */
  async await(
    address: EventAddress,
    member: string,
    waiter: { until: number; harness: string; schema?: unknown },
    verdicts: ReadonlyMap<string, boolean>,
  ): Promise<AwaitReply> {
    const sessionId = parseWaiter(member, '').sessionId
    const schema = waiter.schema === undefined ? '' : await this.keepSchema(JSON.stringify(waiter.schema), sessionId)
    const now = Date.now()
    const value = `${waiter.until}\n${waiter.harness}\n${schema}`
    const checked = [...verdicts].flatMap(([uid, ok]) => [uid, ok ? 'ok' : 'no'])
    const reply = await guarded('awaitEvent', sessionId, () =>
      runScript(this.redis, scripts.awaitEvent, {
        keys: { eventHash: this.keyOf(address) },
        args: { member, waiter: value, now, graceMs: WAITER_GRACE_MS, expired: now >= waiter.until ? '1' : '0', verdicts: checked },
      }),
    )
    const id = eventAddressId(address)
    if (reply[0] === 'event') return { status: 'event', payload: await this.openedPayload(id, reply[2]) }
    if (reply[0] === 'check') {
      const kept = pairs(reply.slice(1))
      return {
        status: 'check',
        events: await Promise.all(kept.map(async ([uid, payload]) => ({ uid, payload: await this.openedPayload(id, payload) }))),
      }
    }
    return { status: reply[0] }
  }

  /** Stores a waiter's JSON Schema under its digest (before the waiter that names it is registered): its reference `#<digest>`. */
  private async keepSchema(json: string, sessionId: string): Promise<string> {
    const digest = createHash('sha256').update(json).digest('base64url').slice(0, 16)
    await guarded('keepEventSchema', sessionId, () => this.redis.hsetnx(this.schemasKey, digest, json))
    return `#${digest}`
  }

  /**
   * The JSON Schema of each waiter value's third line: none, a reference to the schemas hash, or the
   * schema itself (a waiter an older version registered). A reference whose schema is gone (the hash
   * was deleted) is no check here: the woken call checks the payload against its own schema.
   */
  private async schemasOf(values: string[]): Promise<unknown[]> {
    const texts = values.map((value) => value.split('\n').slice(2).join('\n'))
    const digests = [...new Set(texts.filter((text) => text.startsWith('#')).map((text) => text.slice(1)))]
    const stored = new Map<string, string | null>()
    if (digests.length > 0) {
      const found = await guarded('eventSchemas', '(any)', () => this.redis.hmget(this.schemasKey, ...digests))
      digests.forEach((digest, i) => stored.set(digest, found[i] ?? null))
    }
    return texts.map((text) => {
      if (text === '') return undefined
      const json = text.startsWith('#') ? stored.get(text.slice(1)) : text
      return json ? JSON.parse(json) : undefined
    })
  }

  /** Whether an event was delivered to this wait (a parking call re-checks after its job was delayed). */
  async delivered(address: EventAddress, member: string): Promise<boolean> {
    const sessionId = parseWaiter(member, '').sessionId
    return (await guarded('delivered', sessionId, () => this.redis.hexists(this.keyOf(address), `d\0${member}`))) === 1
  }

  /** The wait is over (its payload is stored as the call's step): its entries go. An address id names a wait's old address. */
  async done(address: EventAddress | string, member: string): Promise<void> {
    const sessionId = parseWaiter(member, '').sessionId
    const key = typeof address === 'string' ? this.keyOfId(address) : this.keyOf(address)
    await guarded('eventWaitDone', sessionId, () => this.redis.hdel(key, `w\0${member}`, `d\0${member}`))
  }

  /**
   * A wait the call's code no longer registers leaves its old address (by id): the payload delivered
   * there, for the call's new wait to take (then `done` on the old address), else its entry goes.
   */
  async leave(addressId: string, member: string): Promise<{ status: 'event'; payload: unknown } | { status: 'left' }> {
    const sessionId = parseWaiter(member, '').sessionId
    const reply = await guarded('leaveEventWait', sessionId, () =>
      runScript(this.redis, scripts.leaveEventWait, {
        keys: { eventHash: this.keyOfId(addressId) },
        args: { member, now: Date.now(), graceMs: WAITER_GRACE_MS },
      }),
    )
    return reply[0] === 'event' ? { status: 'event', payload: await this.openedPayload(addressId, reply[2]) } : { status: 'left' }
  }

  /**
   * A turn waits to be cancelled by (event, key) (its harness's cancelOn): the sender aborts it. Its
   * entry stays until the event comes or a year passes (a settled turn's abort is a no-op).
   */
  async watchTurn(address: EventAddress, sessionId: string, inputId: string, harness: string): Promise<void> {
    const until = Date.now() + TURN_WATCH_MS
    const key = this.keyOf(address)
    // no field of the hash is needed later than this one (calls wait at most 365 days), so its expiry is the hash's
    await guarded('watchTurn', sessionId, () =>
      this.redis
        .multi()
        .hset(key, `w\0t|${sessionId}|${inputId}`, `${until}\n${harness}\n`)
        .pexpireat(key, until + WAITER_GRACE_MS)
        .exec(),
    )
  }

  /** Delivers one event (`payload` is its JSON text) to the waiters whose schema `checked` accepted it. */
  async deliver(
    address: EventAddress,
    event: { uid: string; id?: string; payload: string },
    checked: readonly string[],
  ): Promise<Delivery> {
    const payload = await this.sealedPayload(eventAddressId(address), event.payload)
    const reply = await guarded(`deliverEvent ${JSON.stringify(address.event)}`, '(any)', () =>
      runScript(this.redis, scripts.deliverEvent, {
        keys: { eventHash: this.keyOf(address) },
        args: {
          uid: event.uid,
          id: event.id ?? '',
          payload,
          now: Date.now(),
          retentionMs: this.retentionMs,
          graceMs: WAITER_GRACE_MS,
          checkedMembers: checked,
        },
      }),
    )
    if (reply[0] === 'stored') return { status: 'stored' }
    const found = pairs(reply.slice(1))
    if (reply[0] === 'check') {
      const schemas = await this.schemasOf(found.map(([, waiter]) => waiter))
      return { status: 'check', schemas: found.map(([member], i) => ({ member, schema: schemas[i] })) }
    }
    return { status: reply[0], waiters: found.map(([member, harness]) => parseWaiter(member, harness)) }
  }
}
