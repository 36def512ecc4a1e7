// What `harness worker` and `harness sweep` take from a harness module and their environment.
import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/errors/index.js'
import { loadHostModule } from '../../src/cli/loadHarnesses.js'
import { msFromEnv } from '../../src/cli/processEnv.js'

describe('a harness module for the worker process', () => {
  afterEach(() => {
    delete process.env.DH_TEST_MS
  })

  it("takes the module's retention export beside its harnesses, and none when it has none", async () => {
    const withRetention = await loadHostModule('./test/fixtures/trimmingWorker.ts')
    expect(withRetention.harnesses.map((h) => h.name)).toEqual(['trimWorker'])
    expect(withRetention.retention).toMatchObject({ sessionMs: 30 * 86_400_000, export: expect.any(Function) })
    expect((await loadHostModule('./test/fixtures/provider.ts')).retention).toBeUndefined()
  })

  it('refuses a retention export that is not the host option with a ConfigError that says what to export', async () => {
    const loading = loadHostModule('./test/fixtures/badRetention.ts')
    await expect(loading).rejects.toBeInstanceOf(ConfigError)
    await expect(loading).rejects.toThrow(
      /exports a "retention" that is not the host option: export \{ sessionMs, export\(sessionId, jsonl, span\?\) \}/,
    )
  })

  it('reads a duration from the environment: unset is the default, anything but a whole number of 0 or more is a ConfigError naming the variable', () => {
    expect(msFromEnv('DH_TEST_MS', 30_000)).toBe(30_000)
    process.env.DH_TEST_MS = '200'
    expect(msFromEnv('DH_TEST_MS', 30_000)).toBe(200)
    for (const bad of ['-1', '1.5', 'soon']) {
      process.env.DH_TEST_MS = bad
      expect(() => msFromEnv('DH_TEST_MS', 30_000)).toThrow(
        new ConfigError(`DH_TEST_MS must be a whole number of milliseconds (0 or more), not "${bad}".`),
      )
    }
  })
})
