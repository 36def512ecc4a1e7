import type { RedisClient } from './client.js'
import { hasType } from './records.js'
import { loggedCallIn, type LoggedCall } from './callState.js'
import { FanoutLedger } from './fanout.js'
import { LogStream, type SessionLogOptions } from './stream.js'
import { SessionInputs } from './inputs.js'
import { SessionActions } from './actions.js'
import { CallLedger } from './callLedger.js'
import { SessionCompactions } from './compactions.js'

/**
 * The session log of one session: its parts, made once over one stream (stream.ts: the connection,
 * the keys, the script runner), which callers use directly: `stream` (append, read, follow),
 * `inputs` (inputs, turns, questions: inputs.ts), `actions` (answers and reruns: actions.ts) and
 * `calls` (the call ledger: callLedger.ts), `compactions` (the model view's compactions: compactions.ts). What needs two parts (a logged call's record, a turn's
 * calls) is here.
 */
export class SessionLog {
  readonly sessionId: string
  readonly stream: LogStream
  readonly inputs: SessionInputs
  readonly actions: SessionActions
  readonly calls: CallLedger
  private compactionsPart: SessionCompactions | undefined
  private fanoutPart: FanoutLedger | undefined

  constructor(redis: RedisClient, prefix: string, sessionId: string, options?: SessionLogOptions)
  /** The log over a stream made already (`via`): its parts are rebuilt over it, nothing else is made. */
  constructor(stream: LogStream)
  constructor(...args: [RedisClient, string, string, SessionLogOptions?] | [LogStream]) {
    this.stream = args.length === 1 ? args[0] : new LogStream(...args)
    this.sessionId = this.stream.sessionId
    this.inputs = new SessionInputs(this.stream)
    this.actions = new SessionActions(this.stream)
    this.calls = new CallLedger(this.stream)
  }

  /** The model view's compactions (made on first use: most logs a worker makes never compact). */
  get compactions(): SessionCompactions {
    return (this.compactionsPart ??= new SessionCompactions(this.stream))
  }

  /** The session's fan-out trees (made on first use: most logs never fan out). */
  get fanout(): FanoutLedger {
    return (this.fanoutPart ??= new FanoutLedger(this.stream))
  }

  /**
   * This log, its commands sent on `client` (LogStream.via: a copy of the stream, or the stream itself
   * when replicas are awaited): on the hot path, so it makes the copy and the three parts over it, no more.
   */
  via(client: RedisClient | undefined): SessionLog {
    const stream = this.stream.via(client)
    return stream === this.stream ? this : new SessionLog(stream)
  }

  /**
   * The call as the record that asked for it holds it (the turn's model response, or runTool's
   * request): its tool, input, turn and the size of an input too large to keep. Reads the log (from
   * the turn's input when `inputId` is given): for rare repairs, not for a hot path.
   */
  async findLoggedCall(toolCallId: string, inputId?: string): Promise<LoggedCall | undefined> {
    const input = inputId ? await this.inputs.getInput(inputId) : null
    return loggedCallIn(await this.stream.read(input ? { from: input.entryId } : {}), toolCallId)
  }

  /** The stored ids of every call the model gave the turn of `inputId`, in log order. */
  async turnCallIds(inputId: string): Promise<string[]> {
    return (await this.inputs.conversation()).flatMap(({ record }) =>
      hasType(record, 'harness.model.response') && record.inputId === inputId ? record.toolCalls.map((c) => c.toolCallId) : [],
    )
  }
}
