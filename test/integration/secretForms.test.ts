// R6 through a host with in-process workers, on real Redis: a secret in a step, sleep or ask name or in
// an ask message is refused before anything is stored; a result or error holding a secret, in any
// form, lands redacted; and afterwards no key under the test's prefix holds any form of the secret.
import { toolDefinition } from '@tanstack/ai'

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, type RedisClient, type Session } from '../../src/index.js'
import { scriptedModel, type ScriptEntry } from '../../src/testing/index.js'
import { SecretStore } from '../../src/tool/index.js'
import { dumpPrefix } from '../helpers/dump.js'
import { records } from '../helpers/log.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { rigClient } from '../rig.js'
import { patient } from '../helpers/patience.js'

// '"' and '\\' change under JSON escaping, 'ü' under URL encoding; 19 bytes, so base64 has padding
const SECRET = 'sk_live_>>>?~"q\\üx'
const REDACTED = '[redacted]'

type Encoding = 'base64' | 'base64url'
const encode = (text: string, encoding: Encoding | 'hex') => Buffer.from(text).toString(encoding)
/** The secret after `times` rounds of JSON string escaping. */
const jsonEscape = (text: string, times: number): string => (times === 0 ? text : jsonEscape(JSON.stringify(text).slice(1, -1), times - 1))

/** base64 of filler + secret: the filler's length mod 3 is the secret's byte offset (0, 1, 2 for each kind). */
const IN_BASE64: Record<string, { filler: string; encoding: Encoding }> = {
  bearerUrlOffset1: { filler: 'Bearer ', encoding: 'base64url' },
  bearerUrlOffset2: { filler: ' Bearer ', encoding: 'base64url' },
  bearerUrlOffset0: { filler: '  Bearer ', encoding: 'base64url' },
  basicOffset1: { filler: 'bob:', encoding: 'base64' },
  basicOffset2: { filler: 'user:', encoding: 'base64' },
  basicOffset0: { filler: 'admin:', encoding: 'base64' },
}

/** Each form a tool builds from the key, and what it lands as once redacted. */
const FORMS: Record<string, { make: (key: string) => string; redacted: string }> = {
  raw: { make: (key) => `key ${key}`, redacted: `key ${REDACTED}` },
  jsonNested: {
    make: (key) => JSON.stringify({ payload: JSON.stringify({ token: key }) }),
    redacted: JSON.stringify({ payload: JSON.stringify({ token: REDACTED }) }),
  },
  hexLower: { make: (key) => `sig ${encode(key, 'hex')}`, redacted: `sig ${REDACTED}` },
  hexUpper: { make: (key) => `sig ${encode(key, 'hex').toUpperCase()}`, redacted: `sig ${REDACTED}` },
  urlEncoded: { make: (key) => `https://pay.example/?key=${encodeURIComponent(key)}`, redacted: `https://pay.example/?key=${REDACTED}` },
  ...Object.fromEntries(
    Object.entries(IN_BASE64).map(([label, { filler, encoding }]) => [
      label,
      {
        make: (key: string) => `Basic ${encode(filler + key, encoding)}`,
        // the filler's own groups stay; the group it shares with the secret goes with the secret
        redacted: `Basic ${encode(filler.slice(0, filler.length - (filler.length % 3)), encoding)}${REDACTED}`,
      },
    ]),
  ),
}

/** Chars of base64(filler + secret) made of secret bytes only (whole groups), found independently of SecretStore. */
function secretOnlyChars({ filler, encoding }: { filler: string; encoding: Encoding }): string {
  const start = Math.ceil(Buffer.byteLength(filler) / 3)
  const end = Math.floor(Buffer.byteLength(filler + SECRET) / 3)
  return encode(filler + SECRET, encoding).slice(start * 4, end * 4)
}

/** Every form the secret could take in stored text. */
const STORED_FORMS = [
  ...[0, 1, 2, 3].map((times) => jsonEscape(SECRET, times)),
  encode(SECRET, 'base64'),
  encode(SECRET, 'base64').replace(/=+$/, ''),
  encode(SECRET, 'base64url'),
  encode(SECRET, 'hex'),
  encode(SECRET, 'hex').toUpperCase(),
  encodeURIComponent(SECRET),
  ...Object.values(FORMS).map(({ make }) => make(SECRET)),
  ...Object.values(IN_BASE64).map(secretOnlyChars),
]

const WHERE = ['do', 'sleep', 'sleepUntil', 'askName', 'askMessage'] as const

it('the test forms differ from each other and cover every encoding (precondition)', () => {
  const made = Object.values(FORMS).map(({ make }) => make(SECRET))
  expect(new Set(made).size).toBe(made.length)
  for (const kind of ['base64', 'base64url']) {
    const offsets = Object.values(IN_BASE64)
      .filter(({ encoding }) => encoding === kind)
      .map(({ filler }) => filler.length % 3)
    expect(new Set(offsets), kind).toEqual(new Set([0, 1, 2]))
  }
  for (const { filler, encoding } of Object.values(IN_BASE64))
    expect(secretOnlyChars({ filler, encoding }).length).toBeGreaterThanOrEqual(16)
  // JSON nested in a string: the value's JSON holds the secret escaped three times, not fewer
  expect(JSON.stringify({ value: FORMS.jsonNested!.make(SECRET) })).not.toContain(jsonEscape(SECRET, 2))
})

describe('R6: secrets in names, and in every encoded form, through a host', () => {
  let prefix: string
  let url: string
  let redis: RedisClient
  let session: Session
  let stepFnRuns = 0

  const approval = z.object({ approved: z.boolean() })
  const leakName = durableTool(
    toolDefinition({
      name: 'leakName',
      description: 'Puts the key into a name or a question',
      inputSchema: z.object({ where: z.enum(WHERE), form: z.string() }),
    }),
    async ({ where, form }, { secrets, step }) => {
      const text = FORMS[form]!.make(secrets.get('STRIPE_KEY')!)
      // an expiry, so an ask that is not refused fails at once instead of waiting for an answer
      const expiresAt = Date.now() + 1000
      if (where === 'do') await step.do(text, () => void stepFnRuns++)
      if (where === 'sleep') await step.sleep(text, '1s')
      if (where === 'sleepUntil') await step.sleepUntil(text, Date.now() + 1000)
      if (where === 'askName') await step.ask({ name: text, message: 'Approve?', schema: approval, expiresAt })
      if (where === 'askMessage') await step.ask({ name: 'approve', message: `Approve ${text}?`, schema: approval, expiresAt })
      return 'not refused'
    },
  )
  const leakResult = durableTool(
    toolDefinition({ name: 'leakResult', description: 'Returns the key', inputSchema: z.object({ form: z.string() }) }),
    async ({ form }, { secrets, step }) => {
      await step.do('marker', () => 'secret-forms-step-marker')
      return { value: FORMS[form]!.make(secrets.get('STRIPE_KEY')!) }
    },
  )
  const leakError = durableTool(
    toolDefinition({ name: 'leakError', description: 'Throws with the key', inputSchema: z.object({ form: z.string() }) }),
    async ({ form }, { secrets }) => {
      throw new Error(`refused: ${FORMS[form]!.make(secrets.get('STRIPE_KEY')!)}`)
    },
  )

  // "batch:<json calls>" makes one batch of tool calls (with their ids), anything else is answered
  const script: ScriptEntry[] = Array.from({ length: 10 }, (_, i) => ({ messages }) => {
    const last = messages.at(-1)!
    if (last.role === 'user' && typeof last.content === 'string' && last.content.startsWith('batch:')) {
      return { toolCalls: JSON.parse(last.content.slice('batch:'.length)) }
    }
    return { text: `done ${i}` }
  })
  const harness = defineHarness({
    name: 'secretForms',
    adapter: scriptedModel(script),
    tools: [leakName, leakResult, leakError],
    secrets: () => ({ STRIPE_KEY: SECRET }),
  })
  const batch = (calls: Array<{ id: string; name: string; input: unknown }>) => `batch:${JSON.stringify(calls)}`

  /** Prompts once and waits for the turn: it must complete (tool errors do not fail a turn). */
  async function completes(text: string) {
    const { inputId } = await session.prompt(text)
    const settled = await session.settled(inputId, { timeoutMs: patient(60_000) })
    expect(settled.outcome).toBe('completed')
    return settled
  }

  /** The landed results of the given calls, by toolCallId. */
  async function landed(ids: string[]): Promise<Record<string, Record<string, any>>> {
    const results = records(await session.log.read({ types: ['harness.tool.result'] }), 'harness.tool.result')
    const byId = Object.fromEntries(results.map((r) => [r.toolCallId as string, r]))
    expect(Object.keys(byId)).toEqual(expect.arrayContaining(ids))
    return byId
  }

  /** Reads every key under the prefix (key names, BullMQ's keys, every type) and finds no form of the secret. */
  async function expectNoFormStored(markers: string[]) {
    const dump = await dumpPrefix(redis, url, prefix)
    // the scan did read what the test stored
    for (const marker of markers) expect(dump).toContain(marker)
    for (const form of STORED_FORMS) expect(dump, form).not.toContain(form)
    expect(new SecretStore({ STRIPE_KEY: SECRET }).find(dump)).toBeUndefined()
  }

  const hosts = useInProcessHosts()
  beforeAll(() => {
    url = hosts.url()
    redis = rigClient(url)
  })
  afterAll(() => redis?.disconnect())

  // a host and prefix per test, so each test's scan sees only what that test stored
  beforeEach(() => {
    const started = hosts.start(harness, 'secret-forms', { concurrency: 10 })
    prefix = started.prefix
    session = started.host.open(harness, { sessionId: 'secret-forms' })
  })

  it('R6: a secret (any form) in a step.do, sleep, sleepUntil or ask name, or in an ask message, lands tool error secret_in_value before fn runs or anything is stored; the session keeps working', async () => {
    const calls = WHERE.flatMap((where) =>
      Object.keys(FORMS).map((form) => ({ id: `name-${where}-${form}`, name: 'leakName', input: { where, form } })),
    )
    await completes(batch(calls))
    const byId = await landed(calls.map((c) => c.id))
    for (const { id } of calls) {
      expect(byId[id]!.error, id).toMatchObject({ code: 'secret_in_value' })
      expect(byId[id]!.error.message, id).toContain('holds the session secret STRIPE_KEY')
    }
    expect(stepFnRuns).toBe(0)
    // nothing of the refused steps, sleeps and questions was written
    const entries = await session.log.read()
    for (const type of ['harness.tool.step', 'harness.tool.sleep', 'harness.tool.question', 'harness.tool.suspended'])
      expect(records(entries, type), type).toEqual([])
    expect(await session.questions()).toEqual([])
    // a later prompt in the same session completes
    expect(await completes('and now?')).toMatchObject({ text: expect.stringMatching(/^done \d$/) })
    await expectNoFormStored(['secret_in_value', 'name-askMessage-basicOffset0'])
  })

  it('R6: a tool result and a thrown tool error holding the secret (raw, nested JSON, base64 of Bearer/user:<secret> at offsets 0-2, hex, URL-encoded) land redacted, and no key under the prefix holds any form', async () => {
    const forms = Object.keys(FORMS)
    const calls = forms.flatMap((form) => [
      { id: `result-${form}`, name: 'leakResult', input: { form } },
      { id: `error-${form}`, name: 'leakError', input: { form } },
    ])
    await completes(batch(calls))
    const byId = await landed(calls.map((c) => c.id))
    for (const form of forms) {
      expect(byId[`result-${form}`]!.result, form).toEqual({ value: FORMS[form]!.redacted })
      expect(byId[`error-${form}`]!.error, form).toEqual({ message: `refused: ${FORMS[form]!.redacted}` })
    }
    await expectNoFormStored(['secret-forms-step-marker', `refused: ${FORMS.basicOffset2!.redacted}`])
  })
  it('R6: a prompt (its text or context) or a runTool input holding the secret, in any form, is refused with SecretInValueError; nothing is logged or enqueued', async () => {
    for (const [label, { make }] of Object.entries(FORMS)) {
      const text = make(SECRET)
      await expect(session.prompt(`please use ${text}`, { inputId: `text-${label}` }), label).rejects.toMatchObject({
        name: 'SecretInValueError',
        message: expect.stringContaining('holds the session secret STRIPE_KEY'),
      })
      await expect(session.prompt('hello', { inputId: `ctx-${label}`, context: { note: text } }), label).rejects.toMatchObject({
        name: 'SecretInValueError',
      })
      await expect(session.runTool({ name: 'leakResult', input: { form: text }, toolCallId: `run-${label}` }), label).rejects.toMatchObject(
        {
          name: 'SecretInValueError',
          message: expect.stringContaining('Input of tool "leakResult"'),
        },
      )
    }
    expect(await session.log.read()).toEqual([])
    // the session works on, and the scan reads what it stored
    expect(await session.runTool({ name: 'leakResult', input: { form: 'raw' }, toolCallId: 'run-marker' })).toEqual({
      value: FORMS.raw!.redacted,
    })
    await expectNoFormStored(['run-marker'])
  })
})
