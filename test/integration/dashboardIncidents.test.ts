// The dashboard's incident view in headless Chromium (issue 27): a failed-turns view with Rerun, a
// bulk "Rerun all failed" behind a confirmation (it skips a session canAccess refuses), Pause and
// Resume of the harness; the principal of the prompt, the approval and the rerun is in the log and in
// the session's timeline. A screenshot goes to docs/ with DH_SCREENSHOTS=1.
import { toolDefinition } from '@tanstack/ai'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { serveDashboard } from '../../src/dashboard/index.js'
import { defineHarness, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { chromiumPath } from '../helpers/chromium.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'

const TOKEN = 'incidents-test-token'
const state = { providerDown: true, refunds: 0 }

const refund = toolDefinition({
  name: 'refund',
  description: 'Refund',
  inputSchema: z.object({ amount: z.number() }),
  needsApproval: true,
}).server(async ({ amount }) => {
  state.refunds++
  return { refunded: amount }
})

const desk = defineHarness({
  name: 'desk',
  adapter: scriptedModel([
    { toolCalls: [{ name: 'refund', input: { amount: 5 } }] },
    () => {
      if (state.providerDown) throw new Error('provider unavailable')
      return { text: 'refunded' }
    },
  ]),
  tools: [refund],
})

describe('the incident view in headless Chromium', () => {
  const hosts = useInProcessHosts()
  let browser: Browser

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] })
  })
  afterAll(async () => {
    await browser?.close()
  })

  async function openPage(url: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1200, height: 700 } })
    await context.addCookies([{ name: 'dh_token', value: TOKEN, url }])
    const page = await context.newPage()
    page.on('pageerror', (error) => {
      throw error
    })
    return page
  }

  /** A turn of `desk` whose refund an operator approves, then fails on the provider. */
  async function failedTurn(host: HarnessHost, sessionId: string, answer: (questionId: string) => Promise<unknown>) {
    const session = host.open(desk, { sessionId })
    const { inputId } = await session.prompt('refund 5', { principal: 'alice@shop' })
    await until(async () => (await session.questions()).length === 1, 'the approval to be asked')
    await answer((await session.questions())[0]!.questionId)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed' })
    return { session, inputId }
  }

  it('failed turns: Rerun one, Rerun all (confirmed; canAccess holds), Pause and Resume the harness; who did what is in the timeline', async () => {
    const { host } = hosts.start(desk, 'dash-incidents')
    const dashboard = await serveDashboard({
      host,
      port: 0,
      authorize: (request) => (request.headers.get('cookie')?.includes(`dh_token=${TOKEN}`) ? { id: 'ops-7', role: 'ops' } : null),
      canAccess: (_principal, sessionId) => !sessionId.startsWith('secret-'),
      canOperate: () => true,
    })
    hosts.defer(() => dashboard.close())
    const cookie = { cookie: `dh_token=${TOKEN}`, origin: dashboard.url.replace(/\/$/, ''), 'content-type': 'application/json' }
    // the approval goes through the dashboard, as an operator's click would send it
    const approveOnDashboard = (sessionId: string) => async (questionId: string) => {
      const response = await fetch(`${dashboard.url}sessions/${sessionId}/questions/${questionId}/answer`, {
        method: 'POST',
        headers: cookie,
        body: JSON.stringify({ approved: true }),
      })
      expect(response.status).toBe(200)
    }
    const turns = []
    for (const id of ['refund-1', 'refund-2', 'refund-3']) turns.push(await failedTurn(host, id, approveOnDashboard(id)))
    const secret = await failedTurn(host, 'secret-1', async (questionId) =>
      host.open(desk, { sessionId: 'secret-1' }).answer(questionId, { approved: true }),
    )
    state.providerDown = false

    const page = await openPage(dashboard.url)
    await page.goto(`${dashboard.url}turns?status=failed`)
    const rows = page.locator('#turns tr[data-turn]')
    expect(await rows.count()).toBe(3) // the secret session is not shown
    if (process.env.DH_SCREENSHOTS === '1') await page.screenshot({ path: 'docs/dashboard-turns.png', fullPage: true })
    await page.screenshot({ path: '/tmp/dashboard-turns.png', fullPage: true })

    // Rerun one row
    const first = rows.filter({ hasText: 'refund-1' })
    await first.getByRole('button', { name: 'Rerun' }).click()
    await first.locator('.status').filter({ hasText: 'rerun: true' }).waitFor()
    expect(await turns[0]!.session.settled(turns[0]!.inputId)).toMatchObject({ outcome: 'completed', text: 'refunded' })

    // Rerun all failed: a confirmation first; dismissed, nothing happens
    page.once('dialog', (dialog) => void dialog.dismiss())
    await page.getByRole('button', { name: 'Rerun all failed' }).click()
    expect((await host.turns({ status: 'failed' })).items).toHaveLength(3)
    page.once('dialog', (dialog) => void dialog.accept())
    await page.getByRole('button', { name: 'Rerun all failed' }).click()
    await page.locator('form.bulk .status').filter({ hasText: 'Done: 2 turns.' }).waitFor()
    for (const t of turns) expect(await t.session.settled(t.inputId)).toMatchObject({ outcome: 'completed' })
    expect((await secret.session.settled(secret.inputId)).outcome).toBe('failed') // canAccess refused it
    expect(state.refunds).toBe(4) // each approved refund ran once: kept, never run again (R19)

    // Pause, then Resume, the harness
    await page.getByRole('button', { name: 'Pause' }).click()
    await page.locator('.harnesses .status').filter({ hasText: 'paused: true' }).waitFor()
    expect(await host.paused('desk')).toBe(true)
    await page.reload()
    await page.getByRole('button', { name: 'Resume' }).click()
    await page.locator('.harnesses .status').filter({ hasText: 'resumed: true' }).waitFor()
    expect(await host.paused('desk')).toBe(false)

    // who did what: in the log, and in the session's timeline
    const log = await turns[0]!.session.log.read()
    expect(records(log, 'harness.input')[0]).toMatchObject({ principal: 'alice@shop' })
    expect(records(log, 'harness.tool.answer')[0]).toMatchObject({ principal: 'ops-7' })
    expect(records(log, 'harness.turn.rerun')[0]).toMatchObject({ principal: 'ops-7' })
    await page.goto(`${dashboard.url}sessions/refund-1`)
    const timeline = page.locator('#timeline')
    await timeline.getByText(/input .* by alice@shop: refund 5/).waitFor()
    await timeline.getByText(/answered \(.*\) by ops-7/).waitFor()
    await timeline.getByText(/turn .* rerun \(.*\) by ops-7/).waitFor()
    await page.screenshot({ path: '/tmp/dashboard-timeline.png', fullPage: true })
    await page.context().close() // its live timeline (SSE) would hold the dashboard's close
  })
  it("an open turn's Abort: the turn settles aborted with the operator as its principal, and the timeline shows 'aborted by <id>'", async () => {
    const { host } = hosts.start(desk, 'dash-abort')
    const dashboard = await serveDashboard({
      host,
      port: 0,
      authorize: (request) => (request.headers.get('cookie')?.includes(`dh_token=${TOKEN}`) ? { id: 'ops-7', role: 'ops' } : null),
      canOperate: () => true,
    })
    hosts.defer(() => dashboard.close())
    const session = host.open(desk, { sessionId: 'abort-me' })
    const { inputId } = await session.prompt('refund 5', { principal: 'alice@shop' })
    // the turn waits on its approval: open
    await until(async () => (await session.questions()).length === 1, 'the approval to be asked')

    const page = await openPage(dashboard.url)
    try {
      await page.goto(`${dashboard.url}turns?status=open`)
      const row = page.locator('#turns tr[data-turn]').filter({ hasText: 'abort-me' })
      await row.getByRole('button', { name: 'Abort' }).click()
      await row.locator('.status').filter({ hasText: 'aborted: true' }).waitFor()
      expect(await session.settled(inputId)).toMatchObject({ outcome: 'aborted' })
      expect(records(await session.log.read(), 'harness.input.settled')[0]).toMatchObject({ outcome: 'aborted', principal: 'ops-7' })

      await page.goto(`${dashboard.url}sessions/abort-me`)
      const timeline = page.locator('#timeline')
      await timeline.getByText(`turn ${inputId} aborted by ops-7: Aborted from the dashboard.`).waitFor({ timeout: 10_000 })
    } finally {
      await page.context().close() // its live timeline (SSE) would hold the dashboard's close
    }
  })
})
