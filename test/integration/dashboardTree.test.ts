// The dashboard's fan-out tree (docs/fan-out.md "Seen from above"): a session page shows the calls its
// calls started and the child agents' sessions, a child agent's subtree only where canAccess lets the
// principal see that session.
import { chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumPath } from '../helpers/chromium.js'
import { serveDashboard } from '../../src/dashboard/index.js'
import { childSessionId } from '../../src/fanout/index.js'
import { crewTurn, researcher } from '../fixtures/fanout.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'

describe("the dashboard's fan-out tree", () => {
  const hosts = useInProcessHosts()
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(5)
    process.env.PROVIDER_URL = provider.url
  })
  afterAll(async () => provider?.close())

  it('a session page draws its tree, a child agent it may not see as a line without its link or id; no principal, no page', async () => {
    const { host } = hosts.start([crewTurn, researcher], 'dash-tree')
    const session = host.open(crewTurn, { sessionId: 'tree-1' })
    const { inputId } = await session.prompt('go')
    expect((await session.settled(inputId)).outcome).toBe('completed')
    const [root] = await host.tree('tree-1')
    const t = root!.toolCallId
    const hidden = childSessionId('tree-1', `${t}.agent-1`)
    const dashboard = await serveDashboard({
      host,
      port: 0,
      authorize: (request) => (request.headers.get('authorization') === 'Bearer tree' ? { user: 'ops' } : null),
      canAccess: (_principal, sessionId) => sessionId !== hidden,
    })
    hosts.defer(() => dashboard.close())
    const page = await fetch(`${dashboard.url}sessions/tree-1`, { headers: { authorization: 'Bearer tree' } })
    expect(page.status, await page.clone().text()).toBe(200)
    const text = await page.text()
    expect(text).toContain('<h2>Fan-out</h2>')
    for (const id of ['leaf-0', 'agent-0', 'agent-1']) expect(text).toContain(`<code>${t}.${id}</code>`)
    expect(text).toContain(`href="/sessions/${childSessionId('tree-1', `${t}.agent-0`)}"`)
    // the shown agent's subtree is drawn (its session's own tree: none here), the hidden one's id is not
    expect(text).toContain(`<code>${t}</code> crew`)
    expect(text).not.toContain(hidden)
    expect(text).toContain('a session you may not see')
    expect((await fetch(`${dashboard.url}sessions/tree-1`)).status).toBe(401)
    if (process.env.DH_SCREENSHOTS === '1') {
      // docs/dashboard-tree.png: the session page's Fan-out section
      const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] })
      const context = await browser.newContext({
        viewport: { width: 1000, height: 700 },
        extraHTTPHeaders: { authorization: 'Bearer tree' },
      })
      const shot = await context.newPage()
      await shot.goto(`${dashboard.url}sessions/tree-1`)
      await shot.locator('h2', { hasText: 'Fan-out' }).scrollIntoViewIfNeeded()
      await shot.screenshot({ path: 'docs/dashboard-tree.png' })
      await browser.close()
    }
  })
})
