import type { Worker } from 'bullmq'

/** Attempts running at once in a tool queue's lanes from which its spare lanes fetch too. */
const BUSY_AT = 2
/** How long the attempts stay under BUSY_AT before the spare lanes stop fetching. */
const IDLE_MS = 100

/**
 * The fetch lanes of one tool queue (laneSizes): the first always fetches; the others, the spares,
 * fetch only while the queue is busy (BUSY_AT attempts running at once), and are paused after IDLE_MS
 * under it. Why: a job that comes in alone wakes the lanes blocked on the queue's marker one after the
 * other (a fetch that finds a job leaves a marker behind it), and their wake-ups and empty fetches
 * ran on the event loop of the call, before it: runTool's p50 one call at a time was about 18% slower
 * with two lanes than with one (docs/decisions/fetch-lanes.md).
 * BullMQ's pause(true) stops a lane's fetching and leaves its active jobs running (their locks renewed).
 */
export class FetchLanes {
  private running = 0
  private sparesOn = true
  private quietSince = 0
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private spares: readonly Worker[] = []

  /** The lanes past the first (they are made after the processor that counts their attempts). */
  serve(spares: readonly Worker[]): void {
    this.spares = spares
    for (const lane of spares) lane.on('resumed', this.resumedElsewhere)
    // a host that starts idle: the spares stop before their first fetch
    if (spares.length > 0) this.arm(0)
  }

  /** Runs one attempt, counted; the attempt's own promise is returned (no promise is added to its chain). */
  run<T>(attempt: () => Promise<T>): Promise<T> {
    if (++this.running >= BUSY_AT && !this.sparesOn) this.resumeSpares()
    let running: Promise<T>
    try {
      running = attempt()
    } catch (error) {
      this.ended()
      throw error
    }
    running.then(this.ended, this.ended)
    return running
  }

  /** No more pausing or resuming (the host closes its workers). */
  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private readonly ended = (): void => {
    if (--this.running !== BUSY_AT - 1 || !this.sparesOn) return
    // from busy to quiet: the spares stop if it stays quiet for IDLE_MS
    this.quietSince = Date.now()
    if (!this.timer) this.arm(IDLE_MS)
  }

  /** A spare resumed by another part (the error back-off of workers.ts) while it is quiet: paused again if it stays so. */
  private readonly resumedElsewhere = (): void => {
    if (this.sparesOn || this.stopped) return
    this.sparesOn = true
    this.quietSince = Date.now()
    if (!this.timer) this.arm(IDLE_MS)
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.check(), ms)
    this.timer.unref()
  }

  private check(): void {
    this.timer = undefined
    if (this.stopped || !this.sparesOn || this.running >= BUSY_AT) return
    const left = this.quietSince + IDLE_MS - Date.now()
    if (left > 0) return this.arm(left)
    this.sparesOn = false
    for (const lane of this.spares) if (!lane.closing) void lane.pause(true).catch(() => {})
  }

  private resumeSpares(): void {
    if (this.stopped) return
    this.sparesOn = true
    for (const lane of this.spares) if (!lane.closing) void lane.resume()
  }
}
