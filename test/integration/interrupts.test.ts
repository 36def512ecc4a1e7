// TanStack's own approval flow through the HTTP handler: a run whose calls need approval ends with an
// interrupt, the real ChatClient decides (addToolApprovalResponse, an interrupt's resolveInterrupt),
// and its resume runs the decision once on the durable approval.
import { ChatClient, fetchServerSentEvents } from '@tanstack/ai-client'
import { describe, expect, it } from 'vitest'
import { chat, refundDefinition } from '../fixtures/chat.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { auth, httpServers, post, readSse, runBody, textOf } from '../helpers/http.js'
import { records } from '../helpers/log.js'

const hosts = useInProcessHosts()
const { serve } = httpServers(hosts)

const client = (base: string, threadId: string) =>
  new ChatClient({ threadId, connection: fetchServerSentEvents(`${base}/run?threadId=${threadId}`, { headers: auth }) })

/** Resolves when the client's loading state turns false after having been true (the resumed run ended). */
function settled(c: ChatClient): Promise<void> {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (!c.getIsLoading() && textOf(c).includes('Done:')) {
        clearInterval(timer)
        resolve()
      }
    }, 50)
  })
}

describe('approvals as TanStack interrupts', () => {
  it('a needsApproval call ends the run with an approval interrupt; addToolApprovalResponse approves it, the tool runs once and the answer streams in', async () => {
    const { base, host } = await serve('int-approve')
    const c = client(base, 'u1-int-approve')
    await c.sendMessage('refund my order')
    const [interrupt] = c.getInterrupts()
    expect(c.getInterrupts()).toHaveLength(1)
    expect(interrupt).toMatchObject({ reason: 'approval_required', canResolve: true, metadata: { kind: 'approval', toolName: 'refund' } })
    // the call's part waits for the decision, as TanStack's approval UI expects
    const part = c
      .getMessages()
      .flatMap((m) => m.parts)
      .find((p) => p.type === 'tool-call')
    expect(part).toMatchObject({ name: 'refund', state: 'approval-requested', approval: { id: interrupt!.id } })
    const session = host.open(chat, { sessionId: 'u1-int-approve' })
    expect(records(await session.log.read(), 'harness.tool.result')).toEqual([])

    await c.addToolApprovalResponse({ id: interrupt!.id, approved: true })
    await settled(c)
    expect(c.getError()).toBeUndefined()
    expect(textOf(c)).toContain('Done: {"order":"o-1","refunded":true}')
    const log = await session.log.read()
    expect(records(log, 'harness.tool.answer').map((r) => r.value)).toEqual([{ approved: true }])
    expect(records(log, 'harness.tool.result')).toMatchObject([{ name: 'refund', result: { order: 'o-1', refunded: true } }])
    expect(records(log, 'harness.input.settled')).toMatchObject([{ outcome: 'completed' }])
  })

  it("denied with an interrupt's resolveInterrupt: the tool does not run and the model reads the denial", async () => {
    const { base, host } = await serve('int-deny')
    const c = client(base, 'u1-int-deny')
    await c.sendMessage('refund my order')
    const [interrupt] = c.getInterrupts()
    ;(interrupt as unknown as { resolveInterrupt(payload: unknown): void }).resolveInterrupt({ approved: false })
    await settled(c)
    const log = await host.open(chat, { sessionId: 'u1-int-deny' }).log.read()
    expect(records(log, 'harness.tool.result')).toMatchObject([{ name: 'refund', error: { code: 'approval_denied' } }])
    expect(textOf(c)).toContain('A person denied this call')
  })

  it('a client that registers the tool definition gets a tool-approval interrupt: resolveInterrupts(true) approves the batch', async () => {
    const { base, host } = await serve('int-bound')
    const c = new ChatClient({
      threadId: 'u1-int-bound',
      tools: [refundDefinition],
      connection: fetchServerSentEvents(`${base}/run?threadId=u1-int-bound`, { headers: auth }),
    })
    await c.sendMessage('two refunds please')
    expect(c.getInterrupts().map((i) => i.kind)).toEqual(['tool-approval', 'tool-approval'])
    c.resolveInterrupts(true)
    await settled(c)
    expect(c.getInterruptState().interruptErrors).toEqual([])
    const log = await host.open(chat, { sessionId: 'u1-int-bound' }).log.read()
    expect(records(log, 'harness.tool.answer').map((r) => r.value)).toEqual([{ approved: true }, { approved: true }])
    expect(records(log, 'harness.input.settled')).toMatchObject([{ outcome: 'completed' }])
  })

  it('two parallel approvals come as one interrupt of two; both approved, both calls run and the turn completes', async () => {
    const { base, host } = await serve('int-two')
    const c = client(base, 'u1-int-two')
    await c.sendMessage('two refunds please')
    const interrupts = c.getInterrupts()
    expect(interrupts.map((i) => (i.metadata as { input: unknown }).input)).toEqual([{ order: 'o-1' }, { order: 'o-2' }])
    for (const i of interrupts) await c.addToolApprovalResponse({ id: i.id, approved: true })
    await settled(c)
    const log = await host.open(chat, { sessionId: 'u1-int-two' }).log.read()
    expect(records(log, 'harness.tool.result').map((r) => r.result)).toEqual(
      expect.arrayContaining([
        { order: 'o-1', refunded: true },
        { order: 'o-2', refunded: true },
      ]),
    )
    expect(records(log, 'harness.input.settled')).toMatchObject([{ outcome: 'completed' }])
  })

  it('a reloaded client gets the pending interrupt from GET run and approves it; a resume posted again changes nothing', async () => {
    const { base, host } = await serve('int-reload')
    const first = client(base, 'u1-int-reload')
    await first.sendMessage('refund my order')
    const { id } = first.getInterrupts()[0]!
    // a new page: hydrate from the server, as `persistence: true` does
    const connection = fetchServerSentEvents(`${base}/run?threadId=u1-int-reload`, { headers: auth })
    const hydrated = await connection.hydrate!('u1-int-reload')
    expect(hydrated.interrupts?.pending.map((i) => i.id)).toEqual([id])
    expect(JSON.stringify(hydrated.messages)).toContain('approval-requested')
    // the decision as any AG-UI client posts it, twice (a retry): one answer, one run of the tool
    const runId = hydrated.interrupts!.runId
    const resume = (run: string) =>
      JSON.stringify({
        ...(JSON.parse(runBody('u1-int-reload', run, 'refund my order')) as object),
        parentRunId: runId,
        resume: [{ interruptId: id, status: 'resolved', payload: { approved: true } }],
      })
    const events = await readSse(await post(`${base}/run`, resume('resume-1')))
    expect(events[0]!.data).toMatchObject({ type: 'RUN_STARTED', runId: 'resume-1' })
    expect(events.at(-1)!.data).toMatchObject({ type: 'RUN_FINISHED', runId: 'resume-1' })
    expect(events.some((e) => e.data.type === 'TOOL_CALL_RESULT')).toBe(true)
    // the client has everything before the decision: the resumed stream does not repeat the prompt or the call
    expect(events.some((e) => e.data.type === 'TOOL_CALL_START')).toBe(false)
    const again = await readSse(await post(`${base}/run`, resume('resume-2')))
    expect(again.at(-1)!.data).toMatchObject({ type: 'RUN_FINISHED', runId: 'resume-2' })
    const log = await host.open(chat, { sessionId: 'u1-int-reload' }).log.read()
    expect(records(log, 'harness.tool.answer')).toHaveLength(1)
    expect(records(log, 'harness.tool.result')).toHaveLength(1)
    expect((await connection.hydrate!('u1-int-reload')).interrupts).toBeNull()
  })

  it('a resume that edits the call or names a run that does not exist is refused and decides nothing', async () => {
    const { base, host } = await serve('int-bad')
    const c = client(base, 'u1-int-bad')
    await c.sendMessage('refund my order')
    const { id } = c.getInterrupts()[0]!
    const base0 = JSON.parse(runBody('u1-int-bad', 'r-2', 'x')) as object
    const edited = await post(
      `${base}/run`,
      JSON.stringify({ ...base0, parentRunId: 'nope', resume: [{ interruptId: id, status: 'resolved', payload: { approved: true } }] }),
    )
    expect(edited.status).toBe(404)
    const runId = (await fetch(`${base}/snapshot?threadId=u1-int-bad`, { headers: auth }).then((r) => r.json())).running[0]
    const editing = await post(
      `${base}/run`,
      JSON.stringify({
        ...base0,
        parentRunId: runId,
        resume: [{ interruptId: id, status: 'resolved', payload: { approved: true, editedArgs: { order: 'o-9' } } }],
      }),
    )
    expect(editing.status).toBe(400)
    expect((await editing.json()).error).toContain('editing')
    expect(records(await host.open(chat, { sessionId: 'u1-int-bad' }).log.read(), 'harness.tool.answer')).toEqual([])
  })
})
