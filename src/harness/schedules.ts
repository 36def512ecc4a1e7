import { openValue, sealValue, type CodecPlace } from '../codec/index.js'
import { Queue, Worker, type Job } from 'bullmq'
import type { Logger } from 'pino'
import { InvalidScheduleError, isDurableHarnessError } from '../errors/index.js'
import { assertSessionId, isSafeId, openOrMask, ScheduleTicks, type RedisClient, type SessionLog } from '../log/index.js'
import { bullPrefix } from '../queue/index.js'
import { parseDuration, type Duration } from '../tool/index.js'
import type { Harness } from './defineHarness.js'
import { checkPrompt } from './promptOptions.js'
import type { Session } from './session.js'

/** A schedule for `host.schedule`: which harness's session to prompt with what, every interval or on a cron pattern. */
export interface ScheduleOptions {
  /** The schedule's id ([A-Za-z0-9._-], at most 100 characters): scheduling it again replaces it. */
  id: string
  harness: Harness | string
  /** A tick this often (`'2s'`, `'1h'`, ms). Give `every` or `cron`. */
  every?: Duration
  /** A cron pattern (`'0 9 * * 1-5'`, seconds optional), in `tz`. */
  cron?: string
  /** IANA time zone of `cron` (default UTC). */
  tz?: string
  /** The prompt each tick sends. */
  prompt: string
  /** The session each tick prompts (default `schedule-<id>`). */
  sessionId?: string
  /** `'queue'` (default): a tick while the last tick's turn runs waits in the session's line; `'skip'`: it is skipped. */
  overlap?: 'skip' | 'queue'
}

/** A schedule as `host.schedules()` lists it: its options, its next tick and what its ticks did. */
export interface ScheduleInfo {
  id: string
  harness: string
  every?: number
  cron?: string
  tz?: string
  prompt: string
  sessionId: string
  overlap: 'skip' | 'queue'
  /** Epoch ms of the next tick, if BullMQ has it. */
  next?: number
  /** Ticks that prompted, and ticks skipped by `overlap: 'skip'`. */
  prompted: number
  skipped: number
  /** The input id of the last tick that prompted. */
  lastInputId?: string
  /** The error of the last tick that failed (epoch ms `at`), until a tick prompts again. */
  lastError?: { message: string; at: number }
}

/** The schedule methods of a host (createHarnessHost). */
export interface HostSchedules {
  /**
   * Prompts a session on a schedule (BullMQ job schedulers): each tick prompts once across every
   * worker, with the input id `tick-<id>-<tick ms>`, so a tick run again is a no-op. The ticks run on
   * the workers that serve shard 0.
   */
  schedule(options: ScheduleOptions): Promise<ScheduleInfo>
  /** Removes a schedule; false when there was none. */
  unschedule(id: string): Promise<boolean>
  /** Every schedule of the host's prefix. */
  schedules(): Promise<ScheduleInfo[]>
}

interface TickData {
  harness: string
  prompt: string
  sessionId: string
  overlap: 'skip' | 'queue'
}

const QUEUE = 'schedules'

/** Where a schedule's prompt is bound: its session's input text, as each tick's prompt will be. */
const promptPlace = (sessionId: string): CodecPlace => ({ sessionId, type: 'harness.schedule', field: 'prompt' })

/** A schedule's prompt as `host.schedules()` shows it: opened, or `[encrypted]` where this process has no key. */
async function shownPrompt(ctx: SchedulesContext, data: TickData | undefined): Promise<string> {
  if (!data) return ''
  return String(await openOrMask(ctx.logFor(data.sessionId).stream.codec, data.prompt, promptPlace(data.sessionId), 'mask'))
}

const MIN_EVERY_MS = 1_000

const codeOf = (error: unknown): string | undefined => (isDurableHarnessError(error) ? error.code : undefined)

/** The input id of a tick: the schedule and the tick's time, so one tick prompts once. */
function tickInputId(id: string, at: number): string {
  return `tick-${id}-${at}`
}

export interface SchedulesContext {
  redis: RedisClient
  prefix: string
  shards: number
  harnesses: ReadonlyMap<string, Harness>
  open(harness: Harness, sessionId: string): Session
  logFor(sessionId: string): SessionLog
  logger: Logger
}

/** Schedules on one BullMQ queue in shard 0 (its hash tag), the host's side and the tick worker. */
export function createSchedules(ctx: SchedulesContext) {
  const connection = ctx.redis
  const prefix = bullPrefix(ctx.prefix, 0, ctx.shards)
  const ticks = new ScheduleTicks(ctx.redis, ctx.prefix, ctx.shards)
  let queue: Queue<TickData> | undefined
  const queueOf = () => {
    if (!queue) {
      queue = new Queue<TickData>(QUEUE, { connection, prefix, streams: { events: { maxLen: 100 } } })
      queue.on('error', () => {})
    }
    return queue
  }

  async function tick(job: Job<TickData>): Promise<string> {
    const { harness: name, sessionId } = job.data
    const id = job.repeatJobKey ?? ''
    const at = job.opts.prevMillis ?? Number(String(job.id).split(':').at(-1))
    const log = ctx.logger.child({ schedule: id, sessionId, tick: at })
    const harness = ctx.harnesses.get(name)
    if (!harness) {
      const message = `harness ${JSON.stringify(name)} is not one of this host's`
      await ticks.failed(id, message, Date.now())
      log.error({ harness: name }, 'schedule tick for a harness this host does not run')
      return 'unknown harness'
    }
    const inputId = tickInputId(id, at)
    try {
      return await prompt(job, harness, inputId, log)
    } catch (error) {
      // BullMQ tries the tick again (attempts); until a tick prompts, host.schedules() shows why it failed
      const message = error instanceof Error ? error.message : String(error)
      await ticks.failed(id, message, Date.now()).catch(() => {})
      log.warn({ err: message, code: codeOf(error), inputId, attempt: job.attemptsMade + 1 }, 'schedule tick failed')
      throw error
    }
  }

  async function prompt(job: Job<TickData>, harness: Harness, inputId: string, log: Logger): Promise<string> {
    const { sessionId, overlap } = job.data
    const id = job.repeatJobKey ?? ''
    const prompt = String(await openValue(ctx.logFor(sessionId).stream.codec, job.data.prompt, promptPlace(sessionId)))
    const session = ctx.open(harness, sessionId)
    if (overlap === 'skip') {
      const { last } = await ticks.of(id)
      if (last && last !== inputId && (await ctx.logFor(sessionId).inputs.getInput(last))?.status === 'open') {
        await ticks.skipped(id)
        log.info({ running: last }, 'schedule tick skipped: the last tick’s turn still runs')
        return 'skipped'
      }
    }
    await session.prompt(prompt, { inputId })
    await ticks.prompted(id, inputId)
    log.info({ inputId }, 'schedule tick prompted')
    return inputId
  }

  const info = async (s: Awaited<ReturnType<Queue<TickData>['getJobSchedulers']>>[number]): Promise<ScheduleInfo> => {
    const id = s.key
    const data = s.template?.data
    const counts = await ticks.of(id)
    return {
      id,
      harness: data?.harness ?? '',
      ...(s.every ? { every: Number(s.every) } : {}),
      ...(s.pattern ? { cron: s.pattern } : {}),
      ...(s.tz ? { tz: s.tz } : {}),
      prompt: await shownPrompt(ctx, data),
      sessionId: data?.sessionId ?? '',
      overlap: data?.overlap ?? 'queue',
      ...(s.next ? { next: s.next } : {}),
      prompted: counts.prompted,
      skipped: counts.skipped,
      ...(counts.last ? { lastInputId: counts.last } : {}),
      ...(counts.lastError ? { lastError: counts.lastError } : {}),
    }
  }

  const api: HostSchedules = {
    async schedule(options) {
      const { id, prompt, cron, tz } = options
      if (typeof id !== 'string' || !isSafeId(id) || id.length > 100)
        throw new InvalidScheduleError(String(id), 'the id must be 1 to 100 characters from [A-Za-z0-9._-].')
      const name = typeof options.harness === 'string' ? options.harness : options.harness?.name
      if (!name || !ctx.harnesses.has(name))
        throw new InvalidScheduleError(id, `harness ${JSON.stringify(name)} is not one of this host's.`)
      if ((options.every === undefined) === (cron === undefined))
        throw new InvalidScheduleError(id, 'give exactly one of `every` and `cron`.')
      if (typeof prompt !== 'string' || prompt.length === 0) throw new InvalidScheduleError(id, '`prompt` must be a non-empty string.')
      const every = options.every === undefined ? undefined : parseDuration(options.every)
      if (every !== undefined && every < MIN_EVERY_MS) throw new InvalidScheduleError(id, `\`every\` must be at least ${MIN_EVERY_MS} ms.`)
      const sessionId = options.sessionId ?? `schedule-${id}`
      assertSessionId(sessionId)
      // what no tick could send is refused now, by the prompt's own checks (a tick's input id, its size, R6)
      await checkPrompt(ctx.harnesses.get(name)!, sessionId, prompt, { inputId: tickInputId(id, Date.now()) }).catch((error: unknown) => {
        throw new InvalidScheduleError(id, 'every tick would be refused', { cause: error })
      })
      const overlap = options.overlap ?? 'queue'
      if (overlap !== 'skip' && overlap !== 'queue') throw new InvalidScheduleError(id, "`overlap` must be 'skip' or 'queue'.")
      const repeat = every !== undefined ? { every } : { pattern: cron!, ...(tz ? { tz } : {}) }
      try {
        await queueOf().upsertJobScheduler(id, repeat, {
          name: 'tick',
          // the prompt is kept sealed in the scheduler's template under a codec (docs/encryption.md)
          data: {
            harness: name,
            prompt: String(await sealValue(ctx.logFor(sessionId).stream.codec, prompt, promptPlace(sessionId))),
            sessionId,
            overlap,
          },
          opts: {
            removeOnComplete: { count: 100 },
            removeOnFail: { count: 100 },
            attempts: 5,
            backoff: { type: 'exponential', delay: 500 },
          },
        })
      } catch (error) {
        throw new InvalidScheduleError(id, `BullMQ refused the schedule: ${error instanceof Error ? error.message : String(error)}`)
      }
      const made = await queueOf().getJobScheduler(id)
      return info({ ...made!, key: id })
    },
    async unschedule(id) {
      const removed = await queueOf().removeJobScheduler(id)
      await ticks.forget(id)
      return removed
    },
    async schedules() {
      return Promise.all((await queueOf().getJobSchedulers(0, -1, true)).map(info))
    },
  }

  return {
    ...api,
    /** The tick worker (autorun false, like the host's other workers); run by the workers serving shard 0. */
    worker(): Worker<TickData> {
      // a tick job a dead worker held comes back within about 3 s: BullMQ schedules a scheduler's next
      // tick from the worker that took the current one, so until then the schedule stands still
      const worker = new Worker<TickData>(QUEUE, tick, {
        connection,
        prefix,
        autorun: false,
        concurrency: 4,
        lockDuration: 2_000,
        stalledInterval: 1_000,
        maxStalledCount: Number.MAX_SAFE_INTEGER,
      })
      worker.on('error', (err) => ctx.logger.warn({ err: err.message, queue: QUEUE }, 'schedule worker error; retrying'))
      return worker
    },
    close: () => queue?.close(),
  }
}
