import type { Worker } from 'bullmq'
import type { Logger } from 'pino'
import { activeListOf, LIVE_TOKEN, reclaimOf } from '../lane/index.js'
import {
  namedConnections,
  parseToolJobId,
  reclaimJob,
  type HeldJob,
  type LivenessLook,
  type NamedConnection,
  type OpenWork,
  type RedisClient,
} from '../log/index.js'
import { countRecovery } from '../telemetry/index.js'
import { ProcessLiveness, STALL_MS } from './processLiveness.js'

/**
 * How long a process must be seen without a connection before its jobs move: longer than its owner
 * takes to notice its own connection closed (a loop that never stalls past STALL_MS reads its sockets
 * within about that; after a longer stall it reads them before its next side effect) and to
 * reconnect after a blip.
 */
const GONE_GRACE_MS = STALL_MS + 300
/** How long a look claims a shard's check (the next look of any process after it checks again). */
const CLAIM_MS = 900
/** After Redis (or this process's link to it) came back, the processes that were connected need time to reconnect. */
const RECONNECT_MS = 5_000
/** Active jobs looked at per queue and look. */
const MAX_JOBS = 1_000
const REASON = 'worker process gone: job moved back to wait'
const LOG_EVERY_MS = 60_000
/** How long one listing of the nodes' connections serves the looks of a pass (well under GONE_GRACE_MS). */
const LISTING_MS = 100

interface Suspect {
  token: string
  expiresAt: number
  since: number
}

export interface DeadWorkersDeps {
  redis: RedisClient
  openWork: OpenWork
  liveness: ProcessLiveness
  logger: Logger
}

/**
 * Finds the jobs of worker processes that are gone and moves them back to wait at once, without
 * waiting for their locks to expire (docs/recovery.md, docs/decisions/worker-liveness.md). Each look
 * of a shard (the workers' event-timer look, once a second: no command of its own) lists the jobs
 * other processes hold in its active lists; their processes' connections are looked for by name on
 * every node (CLIENT LIST). A process seen without any connection on two checks at least
 * GONE_GRACE_MS apart, whose lock was not renewed in between, is gone: each of its jobs is moved as
 * BullMQ's stalled check moves a job whose lock expired (reclaimJob.lua), and the next attempt is
 * fenced as after any crash (R10, R11).
 */
export class DeadWorkers {
  private readonly queues = new Map<number, Worker[]>()
  private readonly suspects = new Map<number, Map<string, Suspect>>()
  private readonly rechecks = new Map<number, NodeJS.Timeout>()
  private untrusted = false
  private listFailedAt = 0
  private listed: { at: number; nodes: Promise<NamedConnection[][]> } | undefined
  private closed = false

  constructor(private readonly deps: DeadWorkersDeps) {}

  /** Checks the jobs of `workers`' queues in shard `shard` (one worker a queue is enough). */
  watch(shard: number, workers: readonly Worker[]): void {
    const known = this.queues.get(shard) ?? []
    for (const worker of workers) if (!known.some((k) => k.name === worker.name) && activeListOf(worker)) known.push(worker)
    this.queues.set(shard, known)
  }

  /** What a look at `shard` asks of lookAtShard.lua; undefined while this process should not check (just connected). */
  lookFor(shard: number, claim = true): LivenessLook | undefined {
    const workers = this.queues.get(shard)
    if (!workers?.length || this.closed || this.untrusted || !this.deps.liveness.connectedFor(RECONNECT_MS)) return undefined
    const lists = workers.map((w) => activeListOf(w)!)
    const { tokenPrefix } = this.deps.liveness
    return {
      active: lists.map((l) => l.active),
      queuePrefixes: lists.map((l) => l.queuePrefix),
      claimMs: claim ? CLAIM_MS : 0,
      livePrefix: LIVE_TOKEN,
      own: tokenPrefix,
      maxJobs: MAX_JOBS,
    }
  }

  /** The jobs a look at `shard` found held by other processes: checks their processes, moves the jobs of gone ones. */
  async seen(shard: number, held: readonly HeldJob[]): Promise<void> {
    if (held.length === 0 || this.closed) return void this.suspects.delete(shard)
    const { liveness, logger } = this.deps
    let nodes: NamedConnection[][]
    try {
      nodes = await this.listing()
    } catch (err) {
      if (Date.now() - this.listFailedAt > LOG_EVERY_MS)
        logger.warn({ err, shard }, 'worker liveness: CLIENT LIST failed; dead workers wait for their locks meanwhile')
      this.listFailedAt = Date.now()
      return
    }
    const own = nodes.map((connections) => connections.filter((c) => c.name === liveness.connectionName))
    if (own.some((mine) => mine.length === 0)) {
      // our own name is missing (a node lists the very connection it answers on): names are not kept there; trust none
      logger.warn({ shard }, 'worker liveness: Redis does not show this process by its connection name; dead workers wait for their locks')
      this.untrusted = true
      return
    }
    // a node restarted or was promoted lately (our own connections there are young): the others may still be reconnecting
    if (own.some((mine) => Math.max(...mine.map((c) => c.ageS)) * 1000 < RECONNECT_MS)) return
    const live = new Set(nodes.flat().map((c) => c.name))
    const now = Date.now()
    const before = this.suspects.get(shard) ?? new Map<string, Suspect>()
    const still = new Map<string, Suspect>()
    for (const job of held) {
      const worker = this.queues.get(shard)?.[job.queue]
      const owner = ProcessLiveness.connectionOf(job.token)
      if (!worker || !owner || live.has(owner)) continue
      const key = `${job.queue}|${job.jobId}`
      const prior = before.get(key)
      const since = prior && prior.token === job.token && prior.expiresAt === job.expiresAt ? prior.since : now
      if (now - since < GONE_GRACE_MS) still.set(key, { token: job.token, expiresAt: job.expiresAt, since })
      else await this.reclaim(worker, job, owner, now - since)
    }
    this.suspects.set(shard, still)
    if (still.size > 0) this.recheck(shard)
  }

  /** Every node's named connections, one listing for the looks of a moment (several shards in one pass). */
  private listing(): Promise<NamedConnection[][]> {
    const now = Date.now()
    if (!this.listed || now - this.listed.at > LISTING_MS) this.listed = { at: now, nodes: namedConnections(this.deps.redis) }
    return this.listed.nodes
  }

  /** Looks at the shard again once its suspects' grace is over (a look of its own, not claimed). */
  private recheck(shard: number): void {
    if (this.rechecks.has(shard)) return
    const timer = setTimeout(() => {
      this.rechecks.delete(shard)
      const look = this.lookFor(shard, false)
      if (!look) return
      this.deps.openWork
        .look(shard, Date.now(), 0, look)
        .then(({ held, looked }) => (looked ? this.seen(shard, held) : undefined))
        .catch((err: unknown) => this.deps.logger.warn({ err, shard }, 'worker liveness: a recheck failed; the next look retries'))
    }, GONE_GRACE_MS)
    timer.unref()
    this.rechecks.set(shard, timer)
  }

  private async reclaim(worker: Worker, job: HeldJob, owner: string, goneForMs: number): Promise<void> {
    const reclaim = reclaimOf(worker, job.jobId)
    if (!reclaim || !(await reclaimJob(this.deps.redis, job, reclaim))) return
    const [kind, sessionId, id] = job.jobId.split('|')
    const ids = kind === 'call' ? { sessionId, toolCallId: parseToolJobId(job.jobId)?.toolCallId } : { sessionId, inputId: id }
    this.deps.logger.warn({ ...ids, queue: worker.name, jobId: job.jobId, owner, goneForMs }, REASON)
    countRecovery(REASON)
  }

  stop(): void {
    this.closed = true
    for (const timer of this.rechecks.values()) clearTimeout(timer)
    this.rechecks.clear()
  }
}
