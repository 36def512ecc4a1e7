import type { RedisClient } from './client.js'
import { hasType } from './records.js'
import { loggedCallIn, type LoggedCall, type RequestBegin } from './callState.js'
import { startCall, type JobStart, type StartReply } from './callStart.js'
import { LogStream, type SessionLogOptions } from './stream.js'
import { SessionInputs } from './inputs.js'
import { SessionActions } from './actions.js'
import { CallLedger } from './callLedger.js'
import { clearEventTimer, eventTimerOf } from './eventTimers.js'

type Ledger = CallLedger
type Inputs = SessionInputs
type Stream = LogStream

/**
 * The session log of one session, composed of parts that share its one stream (stream.ts: the Redis
 * connection, the keys, the script runner): its inputs and questions (inputs.ts), what callers do to
 * its turns (actions.ts) and the call ledger (callLedger.ts). It delegates each method to its part,
 * whose comments say what it does; what needs two parts (a logged call's record, a turn's calls) is
 * here.
 */
export class SessionLog {
  readonly stream: LogStream
  readonly inputs: SessionInputs
  readonly actions: SessionActions
  readonly ledger: CallLedger

  constructor(redis: RedisClient, prefix: string, sessionId: string, options?: SessionLogOptions)
  /** The log over a stream made already (`via`): its parts are rebuilt over it, nothing else is made. */
  constructor(stream: LogStream)
  constructor(...args: [RedisClient, string, string, SessionLogOptions?] | [LogStream]) {
    this.stream = args.length === 1 ? args[0] : new LogStream(...args)
    this.inputs = new SessionInputs(this.stream)
    this.actions = new SessionActions(this.stream)
    this.ledger = new CallLedger(this.stream)
  }

  /**
   * This log, its commands sent on `client` (LogStream.via: a copy of the stream, or the stream itself
   * when replicas are awaited): on the hot path, so it makes the copy and the three parts over it, no more.
   */
  via(client: RedisClient | undefined): SessionLog {
    const stream = this.stream.via(client)
    return stream === this.stream ? this : new SessionLog(stream)
  }

  get redis(): RedisClient {
    return this.stream.redis
  }
  get prefix(): string {
    return this.stream.prefix
  }
  get sessionId(): string {
    return this.stream.sessionId
  }
  get logId(): string {
    return this.stream.logId
  }
  get keys(): Stream['keys'] {
    return this.stream.keys
  }
  get shard(): number {
    return this.stream.shard
  }
  get index(): Stream['index'] {
    return this.stream.index
  }

  // the stream (stream.ts)
  appendLive(...args: Parameters<Stream['appendLive']>) {
    return this.stream.appendLive(...args)
  }
  append(...args: Parameters<Stream['append']>) {
    return this.stream.append(...args)
  }
  read(...args: Parameters<Stream['read']>) {
    return this.stream.read(...args)
  }
  exportJsonl() {
    return this.stream.exportJsonl()
  }
  removeSession(...args: Parameters<Stream['removeSession']>) {
    return this.stream.removeSession(...args)
  }
  readEntry(...args: Parameters<Stream['readEntry']>) {
    return this.stream.readEntry(...args)
  }
  follow(...args: Parameters<Stream['follow']>) {
    return this.stream.follow(...args)
  }
  parseEntry(...args: Parameters<Stream['parseEntry']>) {
    return this.stream.parseEntry(...args)
  }

  // inputs and questions (inputs.ts)
  addInput(...args: Parameters<Inputs['addInput']>) {
    return this.inputs.addInput(...args)
  }
  getInput(...args: Parameters<Inputs['getInput']>) {
    return this.inputs.getInput(...args)
  }
  getSettled(...args: Parameters<Inputs['getSettled']>) {
    return this.inputs.getSettled(...args)
  }
  settle(...args: Parameters<Inputs['settle']>) {
    return this.inputs.settle(...args)
  }
  conversation() {
    return this.inputs.conversation()
  }
  firstInLine() {
    return this.inputs.firstInLine()
  }
  logModelResponse(...args: Parameters<Inputs['logModelResponse']>) {
    return this.inputs.logModelResponse(...args)
  }
  logTurnRecord(...args: Parameters<Inputs['logTurnRecord']>) {
    return this.inputs.logTurnRecord(...args)
  }
  getQuestion(...args: Parameters<Inputs['getQuestion']>) {
    return this.inputs.getQuestion(...args)
  }
  openQuestions(...args: Parameters<Inputs['openQuestions']>) {
    return this.inputs.openQuestions(...args)
  }

  // answers and reruns (actions.ts)
  rerun(...args: Parameters<SessionActions['rerun']>) {
    return this.actions.rerun(...args)
  }
  answerQuestion(...args: Parameters<SessionActions['answerQuestion']>) {
    return this.actions.answerQuestion(...args)
  }

  // the call ledger (callLedger.ts)
  requestCall(...args: Parameters<Ledger['requestCall']>) {
    return this.ledger.requestCall(...args)
  }
  callExists(...args: Parameters<Ledger['callExists']>) {
    return this.ledger.callExists(...args)
  }
  getStep(...args: Parameters<Ledger['getStep']>) {
    return this.ledger.getStep(...args)
  }
  getStepAndRetry(...args: Parameters<Ledger['getStepAndRetry']>) {
    return this.ledger.getStepAndRetry(...args)
  }
  saveStepRetry(...args: Parameters<Ledger['saveStepRetry']>) {
    return this.ledger.saveStepRetry(...args)
  }
  getCall(...args: Parameters<Ledger['getCall']>) {
    return this.ledger.getCall(...args)
  }
  beginCall(...args: Parameters<Ledger['beginCall']>) {
    return this.ledger.beginCall(...args)
  }
  beginLoggedCall(...args: Parameters<Ledger['beginLoggedCall']>) {
    return this.ledger.beginLoggedCall(...args)
  }
  saveStep(...args: Parameters<Ledger['saveStep']>) {
    return this.ledger.saveStep(...args)
  }
  askQuestion(...args: Parameters<Ledger['askQuestion']>) {
    return this.ledger.askQuestion(...args)
  }
  stagedCount(...args: Parameters<Ledger['stagedCount']>) {
    return this.ledger.stagedCount(...args)
  }
  stageRecords(...args: Parameters<Ledger['stageRecords']>) {
    return this.ledger.stageRecords(...args)
  }
  parkCall(...args: Parameters<Ledger['parkCall']>) {
    return this.ledger.parkCall(...args)
  }
  /** A new runTool call's request, begun, with its job started on a local lane's slot in the same write (callStart.ts). */
  startCall(call: { toolCallId: string; name: string; input: unknown }, begin: RequestBegin, start: JobStart): Promise<StartReply> {
    return startCall(this.stream, call, begin, start)
  }
  landResult(...args: Parameters<Ledger['landResult']>) {
    return this.ledger.landResult(...args)
  }
  cancelCall(...args: Parameters<Ledger['cancelCall']>) {
    return this.ledger.cancelCall(...args)
  }
  /** The wake-up time of the call's event timer (a call parked without its job), else null (eventTimers.ts). */
  eventTimer(toolCallId: string): Promise<number | null> {
    return eventTimerOf(this.stream, toolCallId)
  }
  clearEventTimer(toolCallId: string, epoch: number): Promise<boolean> {
    return clearEventTimer(this.stream, toolCallId, epoch)
  }
  stagedKey(toolCallId: string): string {
    return this.ledger.stagedKey(toolCallId)
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
