// What a reload needs (GET run?threadId=) and the state of a thread (GET snapshot), folded from the
// session log: the log is the source of truth, so any server answers the same.
import type { UIMessage } from '@tanstack/ai'
import { isRecord } from '../log/index.js'
import type { Session } from '../harness/session.js'
import type { Harness } from '../core/index.js'
import { approvalInterrupt } from './interrupts.js'

interface Turn {
  runId: string
  prompt: string
  at: number
  /** 'paused': its model call's retries ran out (onExhausted 'pause'); `POST control { op: 'resume' }` goes on. */
  status: 'running' | 'paused' | 'completed' | 'failed' | 'aborted'
  text?: string
  error?: { message: string; code?: string }
}

interface Folded {
  messages: UIMessage[]
  turns: Turn[]
}

/** The thread's messages in the UIMessage form `useChat` shows, and its turns, from the log. */
async function fold(session: Session): Promise<Folded> {
  // the conversation projection: a reload costs what the conversation holds, not what the log does
  const entries = await session.log.conversation()
  const messages: UIMessage[] = []
  const turns = new Map<string, Turn>()
  const assistants = new Map<string, UIMessage>()
  const assistantOf = (inputId: string) => {
    let message = assistants.get(inputId)
    if (!message) {
      assistants.set(inputId, (message = { id: `assistant-${inputId}`, role: 'assistant', parts: [] }))
      messages.push(message)
    }
    return message
  }
  // a tool result belongs to the turn of the response that called it
  const callTurn = new Map<string, string>()
  for (const entry of entries) {
    if (isRecord(entry, 'harness.input')) {
      const { inputId, text, at } = entry.record
      turns.set(inputId, { runId: inputId, prompt: text, at, status: 'running' })
      messages.push({ id: `user-${inputId}`, role: 'user', parts: [{ type: 'text', content: text }], createdAt: new Date(at) })
    } else if (isRecord(entry, 'harness.model.response')) {
      const { inputId, text, toolCalls } = entry.record
      const message = assistantOf(inputId)
      for (const { toolCallId, name, input } of toolCalls) {
        callTurn.set(toolCallId, inputId)
        message.parts.push({
          type: 'tool-call',
          id: toolCallId,
          name,
          arguments: JSON.stringify(input ?? {}),
          input,
          state: 'input-complete',
        })
      }
      if (text) message.parts.push({ type: 'text', content: text })
    } else if (isRecord(entry, 'harness.tool.result')) {
      const { toolCallId, name, result, error } = entry.record
      const inputId = callTurn.get(toolCallId)
      if (inputId === undefined) continue // a runTool call: no turn shows it
      assistantOf(inputId).parts.push({
        type: 'tool-result',
        toolCallId,
        name,
        content: JSON.stringify(error ? { error: error.message } : (result ?? null)),
        state: error ? 'error' : 'complete',
        ...(error ? { error: error.message } : {}),
      })
    } else if (isRecord(entry, 'harness.turn.paused') || isRecord(entry, 'harness.turn.resumed')) {
      const turn = turns.get(entry.record.inputId)
      if (turn) turn.status = entry.record.type === 'harness.turn.paused' ? 'paused' : 'running'
    } else if (isRecord(entry, 'harness.input.settled')) {
      const { inputId, outcome, text, error } = entry.record
      const turn = turns.get(inputId)
      if (turn) Object.assign(turn, { status: outcome, ...(text !== undefined ? { text } : {}), ...(error ? { error } : {}) })
    }
  }
  return { messages, turns: [...turns.values()] }
}

/**
 * `GET run?threadId=`: the shape `fetchServerSentEvents().hydrate` reads, plus the open questions. A
 * running turn whose calls wait on approvals comes back as its pending interrupts, and those calls'
 * parts as `approval-requested`, so a reloaded client shows them and can decide.
 */
export async function hydration(session: Session, harness: Harness) {
  const [{ messages, turns }, questions] = await Promise.all([fold(session), session.questions()])
  const running = turns.filter((t) => t.status === 'running')
  const runId = running.length > 0 ? running[running.length - 1]!.runId : undefined
  const pending = []
  // in the order of the calls
  for (const part of runId ? messages.flatMap((m) => m.parts) : []) {
    const question = part.type === 'tool-call' && questions.find((q) => q.kind === 'approval' && q.toolCallId === part.id)
    if (!question || part.type !== 'tool-call') continue
    Object.assign(part, { state: 'approval-requested', approval: { id: question.questionId, needsApproval: true } })
    pending.push(approvalInterrupt(harness, question, { name: part.name, input: part.input ?? {} }, runId!))
  }
  return {
    messages,
    activeRun: runId ? { runId } : null,
    interrupts: runId && pending.length > 0 ? { runId, pending } : null,
    questions,
  }
}

/** `GET snapshot?threadId=`: the thread's turns, the running ones, and its open questions. */
export async function snapshot(session: Session) {
  const [{ turns }, questions] = await Promise.all([fold(session), session.questions()])
  const running = turns.filter((t) => t.status === 'running').map((t) => t.runId)
  const paused = turns.filter((t) => t.status === 'paused').map((t) => t.runId)
  const status = running.length > 0 ? 'running' : paused.length > 0 ? 'paused' : 'idle'
  return { threadId: session.sessionId, status, running, paused, turns, questions }
}
