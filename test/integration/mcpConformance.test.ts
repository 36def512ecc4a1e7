// The MCP protocol's own conformance suite (@modelcontextprotocol/conformance 0.1.13: 0.1.14 and later
// import fs.globSync, which Node 20 lacks) against `harness mcp` serving test/fixtures/mcpConformanceTools.ts.
// Every server scenario runs; the ones about tools, the lifecycle and the transport must pass, and the
// ones that do not apply to a server of durable tools are listed with the reason (docs/mcp.md).
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnBin } from '../helpers/cli.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix } from '../rig.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))

/** Scenarios that cannot pass against a server of durable tools, and why (each has a failing check). */
const NOT_APPLICABLE: Record<string, string> = {
  'tools-call-with-logging': 'notifications/message during a call: a durable call runs on a worker, away from the request',
  'tools-call-with-progress': 'notifications/progress during a call: likewise',
  'tools-call-sampling': 'sampling/createMessage: a durable tool has no way to ask the client for a model call',
  'resources-list': 'resources: the server serves tools only',
  'resources-read-text': 'resources',
  'resources-read-binary': 'resources',
  'resources-templates-read': 'resources',
  'resources-subscribe': 'resources',
  'resources-unsubscribe': 'resources',
  'prompts-list': 'prompts: the server serves tools only',
  'prompts-get-simple': 'prompts',
  'prompts-get-with-args': 'prompts',
  'prompts-get-embedded-resource': 'prompts',
  'prompts-get-with-image': 'prompts',
}

interface Check {
  id: string
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO'
  errorMessage?: string
}

describe('the MCP conformance suite against harness mcp', () => {
  const closers: Array<() => Promise<unknown>> = []
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {})
  })

  it('R27 every scenario that applies to a server of durable tools passes; the others are listed with their reason', async () => {
    const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('mcp-conformance'), LOG_LEVEL: 'warn' }
    closers.push(() => cleanupPrefix(env.REDIS_URL, env.DH_PREFIX))
    const bin = spawnBin(['mcp', 'test/fixtures/mcpConformanceTools.ts', '--port', '0', '--concurrency', '4'], env)
    closers.push(async () => {
      bin.proc.kill('SIGTERM')
      await bin.closed
    })
    const url = (await bin.waitForLine((l) => l.startsWith('MCP server: '))).slice('MCP server: '.length).trim()
    const out = mkdtempSync(join(tmpdir(), 'dh-conformance-'))
    closers.push(async () => rmSync(out, { recursive: true, force: true }))
    // exit code 1 when any check fails: the scenarios that do not apply fail by design, so the files are the verdict
    await run(join(root, 'node_modules', '.bin', 'conformance'), ['server', '--url', url, '--suite', 'all', '-o', out], {
      cwd: root,
      maxBuffer: 16 << 20,
    }).catch(() => {})
    const results: Record<string, Record<Check['status'], number> & { failures: string[] }> = {}
    for (const folder of readdirSync(out)) {
      const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(folder)![1]!
      const checks = JSON.parse(readFileSync(join(out, folder, 'checks.json'), 'utf8')) as Check[]
      const tally = { SUCCESS: 0, FAILURE: 0, WARNING: 0, INFO: 0, failures: [] as string[] }
      for (const check of checks) {
        tally[check.status]++
        if (check.status === 'FAILURE') tally.failures.push(`${check.id}: ${check.errorMessage ?? ''}`)
      }
      results[scenario] = tally
    }
    console.log(
      Object.entries(results)
        .map(
          ([s, r]) =>
            `${s}: ${r.SUCCESS} passed, ${r.FAILURE} failed, ${r.WARNING} warnings${NOT_APPLICABLE[s] ? ` (n/a: ${NOT_APPLICABLE[s]})` : ''}`,
        )
        .join('\n'),
    )
    expect(Object.keys(results).length).toBeGreaterThanOrEqual(30)
    const failedThatApply = Object.entries(results).filter(([s, r]) => !NOT_APPLICABLE[s] && r.FAILURE > 0)
    expect(failedThatApply).toEqual([])
    for (const scenario of ['tools-call-simple-text', 'tools-call-error', 'tools-call-elicitation', 'dns-rebinding-protection'])
      expect(results[scenario]?.SUCCESS, scenario).toBeGreaterThan(0)
  }, 240_000)
})
