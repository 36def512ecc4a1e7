// The chat example in a real browser: headless Chromium (test/helpers/chromium.ts) driven by
// playwright-core opens the page that `npm run example:chat` serves, sends a prompt through
// TanStack's ChatClient, and sees the answer grow while the model writes it.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumPath } from '../helpers/chromium.js'
import { getRedisUrl } from '../rig.js'

describe('the chat example in headless Chromium', () => {
  let server: ChildProcess
  let url: string
  let browser: Browser

  beforeAll(async () => {
    const executablePath = chromiumPath() // first: a missing browser fails with its one line
    server = spawn(process.execPath, ['--import', 'tsx', 'examples/chat/server.ts'], {
      env: { ...process.env, PORT: '0', REDIS_URL: await getRedisUrl() },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    url = await new Promise<string>((resolve, reject) => {
      server.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        const found = /Open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output)
        if (found) resolve(found[1]!)
      })
      server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
      server.once('exit', (code) => reject(new Error(`example server exited ${code}: ${output}`)))
    })
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] })
  })
  afterAll(async () => {
    await browser?.close()
    server?.kill('SIGTERM')
  })

  it('a prompt from the page streams its answer in, piece by piece; a tool call shows with its result; an approval is shown, approved, and the tool runs', async () => {
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } })
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(url)
    await page.fill('#prompt', 'hello there')
    // the answer's text as the page shows it, every time the page changes it (recorded in the page, so
    // a busy machine that slows this test's polling misses no step): it must have grown in steps
    await page.evaluate(() => {
      const texts: string[] = []
      ;(window as unknown as { seenTexts: string[] }).seenTexts = texts
      const record = () => {
        const text = [...document.querySelectorAll('.msg.assistant')].map((e) => e.textContent).join('|')
        if (text && texts.at(-1) !== text) texts.push(text)
      }
      new MutationObserver(record).observe(document.body, { childList: true, subtree: true, characterData: true })
    })
    await page.click('#send')
    await page.waitForFunction(() => (window as unknown as { seenTexts: string[] }).seenTexts.at(-1)?.endsWith('through Redis.'), null, {
      timeout: 10_000,
    })
    const seen = new Set(await page.evaluate(() => (window as unknown as { seenTexts: string[] }).seenTexts))
    const final = [...seen].at(-1) ?? ''
    expect(final).toBe(
      'You asked: "hello there". I am a scripted model, streaming this answer to you piece by piece, from a worker, through Redis.',
    )
    // more than two partial texts, each a beginning of the final one
    const partial = [...seen].filter((t) => t !== final)
    expect(partial.length).toBeGreaterThan(2)
    for (const text of partial) expect(final.startsWith(text)).toBe(true)

    await page.fill('#prompt', 'What is the stock of sku-42?')
    await page.click('#send')
    await page.waitForFunction(() => /Anything else\?$/.test(document.querySelector('#messages')?.textContent ?? ''), null, {
      timeout: 30_000,
    })
    const tools = await page.locator('.msg.tool').allTextContents()
    expect(tools.some((t) => t.includes('"stock":3'))).toBe(true)

    // a needsApproval tool: the page shows the approval, the test approves it, the tool runs and the answer streams in
    await page.fill('#prompt', 'please refund order-7')
    await page.click('#send')
    await page.waitForSelector('.approval button.approve', { timeout: 30_000 })
    expect(await page.textContent('.approval')).toContain('refund')
    expect(await page.textContent('#messages')).not.toContain('Refund done')
    // the decision travels as TanStack's interrupt resume: a POST run with `resume`, not our control route
    const posts: string[] = []
    page.on('request', (r) => {
      if (r.method() === 'POST') posts.push(`${new URL(r.url()).pathname} ${r.postData() ?? ''}`)
    })
    await page.click('.approval button.approve')
    await page.waitForFunction(() => /Refund done: .*"refunded":true/.test(document.querySelector('#messages')?.textContent ?? ''), null, {
      timeout: 30_000,
    })
    expect(await page.locator('.approval').count()).toBe(0)
    expect(posts.filter((p) => p.includes('/api/control'))).toEqual([])
    expect(posts.some((p) => p.startsWith('/api/run') && p.includes('"resume"') && p.includes('"approved":true'))).toBe(true)
    await page.screenshot({ path: join(mkdtempSync(join(tmpdir(), 'chat-')), 'chat.png') })
    expect(errors).toEqual([])
    await page.close()
  })
})
