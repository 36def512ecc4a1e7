import { UsageError } from '../../errors/index.js'
import type { HarnessHost } from '../../harness/host.js'
import { countOption, messageOf, type Command } from '../command.js'
import { withHost } from '../connect.js'
import { terminalSafe } from '../../terminalText.js'
import { jsonLine, print, table } from '../output.js'

const sessionOption = { session: { type: 'string', help: 'the session of the question (default: found among open questions)' } } as const

/** The session an open question belongs to: --session, else the one open question with that id. */
async function sessionOfQuestion(host: HarnessHost, questionId: string, given: unknown) {
  const open = await host.questions({ limit: 10_000 })
  const matches = open.filter((q) => q.questionId === questionId && (given === undefined || q.sessionId === given))
  const sessionId = typeof given === 'string' ? given : matches[0]?.sessionId
  // question ids are per session (made from the call and step), so the same id may be open in several
  if (matches.length > 1)
    throw new UsageError(
      `Question ${questionId} is open in ${matches.length} sessions (${matches.map((q) => q.sessionId).join(', ')}): pass --session <id>.`,
    )
  if (!sessionId) throw new UsageError(`No open question ${questionId} (see: harness questions), or pass --session <id>.`)
  const session = await host.find(sessionId)
  if (!session) throw new UsageError(`No session ${sessionId} of the module's harnesses (check --prefix and --module).`)
  return { session, question: matches[0] }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UsageError(`The answer is not JSON (${messageOf(error)}); quote it for the shell: '{"approved":true}'.`)
  }
}

export const questions: Command = {
  name: 'questions',
  args: '',
  summary: 'Lists open questions and approvals across sessions, oldest first, with the JSON Schema each answer must match.',
  options: {
    json: { type: 'boolean', help: 'one question a line, as JSON' },
    limit: { type: 'string', help: 'at most this many (default 100)' },
  },
  required: 0,
  async run({ values }) {
    const limit = countOption(values.limit, 'limit', 100)
    const list = await withHost(values, false, (host) => host.questions({ limit }))
    if (values.json) for (const q of list) print(jsonLine(q))
    else if (list.length === 0) print('No open questions.')
    else
      print(
        table(
          ['QUESTION', 'SESSION', 'KIND', 'TOOL CALL', 'VERSION', 'MESSAGE', 'SCHEMA'],
          list.map((q) => [
            q.questionId,
            q.sessionId,
            q.kind ?? 'ask',
            q.toolCallId,
            q.version ?? '-',
            q.message,
            JSON.stringify(q.schema),
          ]),
        ),
      )
    return 0
  },
}

export const answer: Command = {
  name: 'answer',
  args: '<questionId> <json>',
  summary: 'Answers an open question (validated against its JSON Schema) and wakes its parked tool call.',
  options: sessionOption,
  required: 2,
  async run({ args, values }) {
    const value = parseJson(args[1]!)
    await withHost(values, true, async (host) => {
      const { session } = await sessionOfQuestion(host, args[0]!, values.session)
      await session.answer(args[0]!, value)
    })
    print(`Answered ${terminalSafe(args[0]!)}.`)
    return 0
  },
}

function decide(approved: boolean): Command {
  return {
    name: approved ? 'approve' : 'deny',
    args: '<questionId>',
    summary: approved
      ? 'Approves a tool call that waits for approval (needsApproval): it runs.'
      : 'Denies a tool call that waits for approval: it lands a tool error with the reason.',
    options: { ...sessionOption, reason: { type: 'string', help: 'why (kept in the log)' } },
    required: 1,
    async run({ args, values }) {
      await withHost(values, true, async (host) => {
        const { session, question } = await sessionOfQuestion(host, args[0]!, values.session)
        if (question && question.kind !== 'approval')
          throw new UsageError(`Question ${args[0]} is not an approval: answer it with harness answer ${args[0]} '<json>'.`)
        await session.answer(args[0]!, { approved, ...(typeof values.reason === 'string' ? { reason: values.reason } : {}) })
      })
      print(`${approved ? 'Approved' : 'Denied'} ${terminalSafe(args[0]!)}.`)
      return 0
    },
  }
}
export const approve = decide(true)
export const deny = decide(false)
