// The test host's manual clock: this process's Date.now() shifted forward by an offset. The product's
// own code reads Date.now() to decide what is due (a sleep's wake-up, a retry's next time, BullMQ's
// promotion of delayed jobs, which its worker sends Date.now() to), so moving the offset moves what is
// due; nothing of the product is replaced. The offset only grows: BullMQ renews a lock only when its
// clock has passed the last renewal, so a clock going back would stall the jobs it runs.
import { ConfigError } from '../errors/index.js'

const realNow = Date.now.bind(Date)
let installed: ManualClock | undefined

export class ManualClock {
  private offset = 0
  /** Each move: from which real time on the clock ran at which offset (oldest first). */
  private readonly moves: Array<{ realAt: number; offset: number }> = []

  /** Takes over Date.now() in this process; one manual clock at a time. */
  static install(): ManualClock {
    if (installed)
      throw new ConfigError(
        "createTestHost({ clock: 'manual' }): another test host's manual clock runs in this process; close it first (await env.close()).",
      )
    const clock = new ManualClock()
    installed = clock
    Date.now = () => realNow() + clock.offset
    return clock
  }

  now(): number {
    return realNow() + this.offset
  }

  /** Moves the clock to `at` (ms); a time already past leaves it where it is. */
  moveTo(at: number): void {
    const real = realNow()
    if (at - real <= this.offset) return
    this.offset = at - real
    this.moves.push({ realAt: real, offset: this.offset })
  }

  /** This clock's time at a moment of the real clock (a log entry's id time, Redis's clock). */
  atReal(ms: number): number {
    let offset = 0
    for (const move of this.moves) if (move.realAt <= ms) offset = move.offset
    return ms + offset
  }

  /** Gives Date.now() back. */
  uninstall(): void {
    if (installed !== this) return
    installed = undefined
    Date.now = realNow
  }
}
