// The dashboard in headless Chromium (test/helpers/chromium.ts, driven by playwright-core): a turn parks on
// step.ask, the dashboard shows the question with a form generated from its JSON Schema, the test
// fills and submits it, the tool resumes in a worker process and the live timeline shows the answer
// and the result; the same for an approval. Screenshots go to docs/.
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumPath } from '../helpers/chromium.js'
import { serveDashboard } from '../../src/dashboard/index.js'
import { ops } from '../fixtures/ops.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'

const TOKEN = 'dashboard-test-token'
const SHOTS = process.env.DH_SCREENSHOTS === '1'

describe('the dashboard in headless Chromium', () => {
  const ctx = useWorkerProcesses({ label: 'dashboard', harnesses: [ops], module: 'test/fixtures/ops.ts', workers: 1 })
  let browser: Browser
  let dashboard: { url: string; close(): Promise<void> }

  beforeAll(async () => {
    const executablePath = chromiumPath() // first: a missing browser fails with its one line
    dashboard = await serveDashboard({
      host: ctx.host,
      port: 0,
      // the handler's kind of authorize: a bearer token, or the cookie the test sets
      authorize: (request) =>
        request.headers.get('authorization') === `Bearer ${TOKEN}` || request.headers.get('cookie')?.includes(`dh_token=${TOKEN}`)
          ? { user: 'ops' }
          : null,
      canAccess: (_principal, sessionId) => !sessionId.startsWith('secret-'),
    })
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] })
  })
  afterAll(async () => {
    await browser?.close()
    await dashboard?.close()
  })

  async function openPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } })
    await context.addCookies([{ name: 'dh_token', value: TOKEN, url: dashboard.url }])
    const page = await context.newPage()
    page.on('pageerror', (error) => {
      throw error
    })
    return page
  }

  it('refuses a request without the principal authorize wants, and a session canAccess refuses', async () => {
    expect((await fetch(dashboard.url)).status).toBe(401)
    expect((await fetch(`${dashboard.url}sessions/secret-1`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(403)
  })

  it('a step.ask question: the generated form answers it, the tool resumes, the timeline shows the answer and the result', async () => {
    const session = ctx.host.open(ops, { sessionId: 'deploy-1' })
    const { inputId } = await session.prompt('deploy:billing')
    const page = await openPage()
    await page.goto(`${dashboard.url}questions`)
    // the question is listed once it is asked (the page is reloaded until the worker has parked it)
    for (;;) {
      if ((await page.locator('.qcard.ask').count()) > 0) break
      await page.waitForTimeout(100)
      await page.reload()
    }
    expect(await page.textContent('.qcard .message')).toContain('Deploy billing v2? <b>not markup</b>')
    expect(await page.locator('.qcard .message b').count()).toBe(0)

    await page.goto(`${dashboard.url}sessions/deploy-1`)
    await page.waitForSelector('#timeline li.question')
    const form = page.locator('form.answer')
    await form.locator('select').selectOption({ label: 'us' })
    await form.locator('input[type=number]').fill('3')
    await form.locator('input[type=checkbox]').check()
    await form.locator('input[type=text]').fill('ship it')
    if (SHOTS) await page.screenshot({ path: 'docs/dashboard-question.png' })
    await form.locator('button.submit').click()
    await page.waitForSelector('#timeline li.answer')
    await page.waitForSelector('#timeline li.settled')
    const lines = await page.locator('#timeline li').allTextContents()
    expect(lines.some((l) => l.includes('"region":"us"') && l.includes('"replicas":3') && l.includes('"canary":true'))).toBe(true)
    expect(lines.some((l) => /result/.test(l) && l.includes('"deployed":"billing"'))).toBe(true)
    expect(lines.some((l) => l.includes('step apply'))).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: expect.stringContaining('"region":"us"') })
    if (SHOTS) await page.screenshot({ path: 'docs/dashboard-timeline.png', fullPage: true })
    await page.context().close()
  })

  it('an approval: Approve on its form runs the tool, and the timeline shows the decision and the result', async () => {
    const session = ctx.host.open(ops, { sessionId: 'refund-1' })
    const { inputId } = await session.prompt('refund:42')
    const page = await openPage()
    await page.goto(`${dashboard.url}sessions/refund-1`)
    // the page refreshes its open questions when the timeline shows one asked
    await page.waitForSelector('.qcard.approval form.answer')
    await page.locator('.qcard.approval input[type=text]').fill('customer is right')
    if (SHOTS) await page.screenshot({ path: 'docs/dashboard-approval.png' })
    await page.locator('.qcard.approval button.approve').click()
    await page.waitForSelector('#timeline li.settled')
    const lines = await page.locator('#timeline li').allTextContents()
    expect(lines.some((l) => l.includes('"approved":true') && l.includes('customer is right'))).toBe(true)
    expect(lines.some((l) => l.includes('"refunded":42'))).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })
    await page.context().close()
  })

  it("a turn paused by onExhausted: 'pause': the session page shows it with its error, and Resume goes on with it", async () => {
    const healed = join(tmpdir(), `${ctx.prefix}-dashboard-healed`)
    const session = ctx.host.open(ops, { sessionId: 'paused-1' })
    const { inputId } = await session.prompt(`overloaded:${healed}`)
    await until(async () => records(await session.log.read(), 'harness.turn.paused').length === 1, 'the turn to pause')
    const page = await openPage()
    await page.goto(`${dashboard.url}sessions/paused-1`)
    const form = page.locator('form.resume')
    expect(await form.textContent()).toContain('503 The server is overloaded')
    writeFileSync(healed, '1')
    try {
      await form.locator('button').click()
      await page.waitForSelector('#timeline li.settled')
      expect(await session.settled(inputId)).toEqual({ outcome: 'completed', text: 'healed' })
      await form.locator('.status', { hasText: 'Resumed.' }).waitFor()
    } finally {
      rmSync(healed, { force: true })
      await page.context().close()
    }
  })

  it("the session page's Compact and Reset buttons compact the model's view and start it over from a note, recorded in the log and shown in the timeline", async () => {
    const session = ctx.host.open(ops, { sessionId: 'context-1' })
    for (const text of ['first', 'second', 'third']) await session.settled((await session.prompt(text)).inputId)
    const page = await openPage()
    page.on('dialog', (dialog) => void dialog.accept())
    await page.goto(`${dashboard.url}sessions/context-1`)
    const compact = page.locator('form.context[data-op="compact"]')
    await compact.locator('button').click()
    await compact.locator('.status', { hasText: /^Compacted\. ~\d+ -> ~\d+ tokens$/ }).waitFor()
    const reset = page.locator('form.context[data-op="reset"]')
    await reset.locator('input[name=note]').fill('the user <b>wants</b> a refund')
    await reset.locator('button').click()
    await reset.locator('.status', { hasText: /^Reset\. ~\d+ -> ~\d+ tokens$/ }).waitFor()
    await page
      .locator('#timeline li', { hasText: "the model's context starts over from the note: the user <b>wants</b> a refund" })
      .waitFor()
    expect(await page.locator('#timeline b').count()).toBe(0)
    if (SHOTS) await page.screenshot({ path: 'docs/dashboard-context.png', fullPage: true })
    expect(records(await session.log.read(), 'harness.compaction')).toEqual([
      expect.objectContaining({ strategy: 'evictOldest', reason: 'manual' }),
      expect.objectContaining({ strategy: 'reset', reason: 'reset', summary: 'the user <b>wants</b> a refund' }),
    ])
    await page.context().close()
  })

  it('the sessions list and bull-board queue views are served', async () => {
    const page = await openPage()
    await page.goto(dashboard.url)
    expect(await page.locator('table a').allTextContents()).toEqual(expect.arrayContaining(['deploy-1', 'refund-1']))
    if (SHOTS) await page.screenshot({ path: 'docs/dashboard-sessions.png' })
    await page.goto(`${dashboard.url}queues`)
    // bull-board's own page: its queue cards, with their job counts
    await page
      .getByText(/^\d+ Jobs?$/)
      .first()
      .waitFor()
    expect(await page.textContent('body')).toContain('tools.ops')
    if (SHOTS) await page.screenshot({ path: 'docs/dashboard-queues.png' })
    await page.context().close()
  })

  it('the schedules list shows each schedule the principal may see, its values escaped', async () => {
    await ctx.host.schedule({ id: 'mornings', harness: ops, cron: '0 9 * * 1-5', tz: 'Europe/Berlin', prompt: '<b>report</b> please' })
    await ctx.host.schedule({ id: 'hidden', harness: ops, every: '1d', prompt: 'x', sessionId: 'secret-sched' })
    try {
      const page = await openPage()
      await page.goto(`${dashboard.url}schedules`)
      const rows = await page.locator('#schedules tbody tr').allTextContents()
      expect(rows).toHaveLength(1)
      expect(rows[0]).toContain('mornings')
      expect(rows[0]).toContain('0 9 * * 1-5 (Europe/Berlin)')
      expect(await page.locator('#schedules tbody td').last().textContent()).toBe('<b>report</b> please')
      expect(await page.locator('#schedules b').count()).toBe(0)
      await page.screenshot({ path: SHOTS ? 'docs/dashboard-schedules.png' : join(tmpdir(), 'dashboard-schedules.png') })
      await page.context().close()
    } finally {
      await ctx.host.unschedule('mornings')
      await ctx.host.unschedule('hidden')
    }
  })
})
