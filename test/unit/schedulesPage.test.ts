import { describe, expect, it } from 'vitest'
import { schedulesPage } from '../../src/dashboard/schedulesPage.js'

describe('schedulesPage', () => {
  it("shows a schedule's last failed tick, escaped, and '-' for a schedule with none", async () => {
    const base = { harness: 'ops', every: 60_000, prompt: 'p', overlap: 'queue' as const, prompted: 0, skipped: 0 }
    const page = String(
      await schedulesPage('/d', [
        { ...base, id: 'failing', sessionId: 'schedule-failing', lastError: { message: 'resolver <b>down</b>', at: 1_700_000_000_000 } },
        { ...base, id: 'fine', sessionId: 'schedule-fine' },
      ]),
    )
    expect(page).toContain('<th>Last error (UTC)</th>')
    expect(page).toContain('<td>2023-11-14 22:13:20: resolver &lt;b&gt;down&lt;/b&gt;</td>')
    expect(page).not.toContain('<b>down')
    expect(page.match(/<td>-<\/td>/g)?.length).toBeGreaterThanOrEqual(2)
  })
})
