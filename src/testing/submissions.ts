// What the test host waits for before it calls the host idle: the runTool calls and prompts of its
// sessions until each is logged. A call is async before its first write, and a clock moved in that
// moment would start its waits from the new time.
import { randomUUID } from 'node:crypto'
import type { Session } from '../harness/session.js'

export class Submissions {
  private readonly pending = new Set<Promise<unknown>>()

  /** The session, with its runTool and prompt tracked until logged (a missing id is made here, as the session would). */
  track(session: Session): Session {
    const runTool = session.runTool.bind(session)
    const prompt = session.prompt.bind(session)
    session.runTool = (call, options) => {
      const toolCallId = call.toolCallId ?? `run-${randomUUID()}`
      const running = runTool({ ...call, toolCallId }, options)
      this.until(running, async () => (await session.log.call(toolCallId)) !== null)
      return running
    }
    session.prompt = (text, options = {}) => {
      const inputId = options.inputId ?? randomUUID()
      const prompting = prompt(text, { ...options, inputId })
      this.until(prompting, async () => (await session.log.input(inputId)) !== null)
      return prompting
    }
    return session
  }

  /** Resolves once every tracked call and prompt is logged (or failed). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending)
  }

  private until(work: Promise<unknown>, logged: () => Promise<boolean>): void {
    let done = false
    work.then(
      () => (done = true),
      () => (done = true),
    )
    const waiting = (async () => {
      while (!done && !(await logged().catch(() => false))) await new Promise((resolve) => setTimeout(resolve, 5))
    })()
    this.pending.add(waiting)
    void waiting.finally(() => this.pending.delete(waiting))
  }
}
