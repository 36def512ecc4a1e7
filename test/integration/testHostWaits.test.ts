// The test host's manual clock across the other waits the product stores (docs/testing.md): a model
// call's retry wait, an approval's timeout and a question's expiry happen at their time with advance.
import { describe, expect, it } from 'vitest'
import { createTestHost } from '../../src/testing/index.js'
import { expiring } from '../fixtures/approvals.js'
import { billingKit, flakyModel } from '../fixtures/billingKit.js'
import { getRedisUrl } from '../rig.js'

describe('createTestHost: the other waits', () => {
  it("a model call's one-hour retry wait: the turn completes once the clock passes it, not before", async () => {
    const env = await createTestHost({ harnesses: [flakyModel], redis: await getRedisUrl() })
    try {
      const session = env.open(flakyModel, 'retry-wait')
      const { inputId } = await session.prompt('hello')
      await env.advance('59m')
      expect((await session.log.input(inputId))?.status).toBe('open')
      await env.advance('2m')
      expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: 'answered after the retry' })
      const [retry] = await session.log.read({ types: ['harness.turn.retry'] })
      expect(retry?.record).toMatchObject({ attempt: 1 })
    } finally {
      await env.close()
    }
  }, 60_000)

  it("an approval's timeout: past it, the call lands approval_expired and its tool never ran", async () => {
    const env = await createTestHost({ harnesses: [expiring], redis: await getRedisUrl() })
    try {
      const session = env.open(expiring, 'approval-timeout')
      const { inputId } = await session.prompt('transfer:5')
      await env.runUntilIdle()
      expect(await session.questions()).toHaveLength(1)
      await env.advance('1s')
      expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })
      const [call] = await env.calls('approval-timeout')
      expect(call).toMatchObject({ name: 'transfer', status: 'done', error: { code: 'approval_expired' } })
    } finally {
      await env.close()
    }
  }, 60_000)

  it("a question's expiry: two days on, the ask throws QuestionExpiredError into the tool", async () => {
    const env = await createTestHost({ harnesses: [billingKit], redis: await getRedisUrl() })
    try {
      const session = env.open(billingKit, 'expiry')
      const result = session.runTool({ name: 'confirm', input: { what: 'the order' }, toolCallId: 'confirm-1' }).catch((e: Error) => e)
      await env.advance('1d')
      expect(await session.questions()).toHaveLength(1)
      await env.advance('1d')
      expect(String(await result)).toMatch(/expired/i)
      expect(await session.questions()).toEqual([])
    } finally {
      await env.close()
    }
  }, 60_000)

  it('retention on the test clock: a session idle for its period is exported and removed, not a day before', async () => {
    const exported: string[] = []
    const env = await createTestHost({
      harnesses: [billingKit],
      redis: await getRedisUrl(),
      retention: { sessionMs: 7 * 86_400_000, export: (sessionId) => void exported.push(sessionId) },
    })
    try {
      const session = env.open(billingKit, 'kept-a-week')
      const napped = session.runTool({ name: 'nap', input: { ms: 86_400_000 }, toolCallId: 'nap-1' })
      await env.advance('1d') // the nap ends a day in: the session is idle from then
      await napped
      expect(await env.calls('kept-a-week')).toEqual([expect.objectContaining({ status: 'done' })])
      await env.advance('6d')
      expect(exported).toEqual([])
      await env.advance('1d')
      expect(exported).toEqual(['kept-a-week'])
      expect(await session.log.read({ limit: 1 })).toEqual([])
    } finally {
      await env.close()
    }
  }, 60_000)
})
