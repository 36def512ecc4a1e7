// R6 at the unit level: a secret is found in every encoded form a value could carry, and redacted.
import { describe, expect, it } from 'vitest'
import { SecretInValueError } from '../../src/errors/index.js'
import { MIN_BASE64_CORE, NO_SECRETS, SecretStore } from '../../src/tool/secrets.js'

// Picked so that every form differs: base64 has '+', '/' (base64url does not) and padding, and the
// secret has characters that URL encoding and JSON escaping change.
const SECRET = 'sk_live_>>>?~"q\\üx'
const b64 = Buffer.from(SECRET).toString('base64')
const FORMS = {
  raw: SECRET,
  base64: b64,
  base64NoPadding: b64.replace(/=+$/, ''),
  base64url: Buffer.from(SECRET).toString('base64url'),
  urlEncoded: encodeURIComponent(SECRET),
  hexLower: Buffer.from(SECRET).toString('hex'),
  hexUpper: Buffer.from(SECRET).toString('hex').toUpperCase(),
}

/** The secret as it reads after `times` rounds of JSON string escaping. */
const jsonEscape = (text: string, times: number): string => (times === 0 ? text : jsonEscape(JSON.stringify(text).slice(1, -1), times - 1))

describe('SecretStore (R6)', () => {
  it('the test secret has distinct forms (precondition)', () => {
    expect(new Set(Object.values(FORMS)).size).toBe(Object.keys(FORMS).length)
    expect(FORMS.base64).toMatch(/[+/]/)
    expect(FORMS.base64).toMatch(/=$/)
    // JSON escapes its '"' and '\\': a value holding the raw secret is found by its JSON-escaped form
    expect(JSON.stringify(SECRET)).not.toContain(SECRET)
  })

  it('get returns the secret by name; nothing else is exposed', () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET })
    expect(store.get('STRIPE_KEY')).toBe(SECRET)
    expect(store.get('OTHER')).toBeUndefined()
    expect(store.empty).toBe(false)
    expect(NO_SECRETS.empty).toBe(true)
  })

  it.each(Object.entries(FORMS))('R6: find sees the %s form inside a JSON value', (_form, text) => {
    const store = new SecretStore({ OTHER: 'unrelated-value', STRIPE_KEY: SECRET })
    expect(store.find(JSON.stringify({ header: `Bearer ${text}` }))).toBe('STRIPE_KEY')
  })

  it('R6: find is undefined for values without a secret, and an empty secret matches nothing', () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET, EMPTY: '' })
    expect(store.find(JSON.stringify({ id: 'ch_1', note: 'sk_live_' }))).toBeUndefined()
    expect(store.find('')).toBeUndefined()
    expect(new SecretStore({ EMPTY: '' }).empty).toBe(true)
  })

  it.each(Object.entries(FORMS))(
    'R6: assertAbsent throws SecretInValueError for the %s form, naming the secret, not its value',
    (_form, text) => {
      const store = new SecretStore({ STRIPE_KEY: SECRET })
      const check = () => store.assertAbsent(JSON.stringify([{ token: text }]), 'Step "charge" value')
      expect(check).toThrow(SecretInValueError)
      try {
        check()
      } catch (error) {
        const e = error as SecretInValueError
        expect(e.code).toBe('secret_in_value')
        expect(e.message).toContain('Step "charge" value holds the session secret STRIPE_KEY')
        for (const form of Object.values(FORMS)) expect(e.message).not.toContain(form)
      }
    },
  )

  it('R6: assertAbsent passes clean values, "no value", and anything when there are no secrets', () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET })
    expect(() => store.assertAbsent('{"id":"ch_1"}', 'v')).not.toThrow()
    expect(() => store.assertAbsent(undefined, 'v')).not.toThrow()
    expect(() => NO_SECRETS.assertAbsent(JSON.stringify(SECRET), 'v')).not.toThrow()
  })

  it('R6: redact replaces every form in strings at any depth, in keys too, and keeps other values', () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET, DB: 'pg-pass-123' })
    const value = {
      raw: `key=${FORMS.raw}.`,
      list: [FORMS.base64, { deep: `x${FORMS.base64url}y${FORMS.urlEncoded}z` }, 7, null, true],
      [FORMS.raw]: 'as a key',
      db: 'postgres://u:pg-pass-123@h',
      n: 42,
    }
    const redacted = store.redact(value)
    const text = JSON.stringify(redacted)
    for (const form of [...Object.values(FORMS), 'pg-pass-123']) expect(text).not.toContain(form)
    expect(redacted.raw).toBe('key=[redacted].')
    expect(redacted.list[0]).toBe('[redacted]')
    expect(redacted.list[1]).toEqual({ deep: 'x[redacted]y[redacted]z' })
    expect(redacted.list.slice(2)).toEqual([7, null, true])
    expect(redacted.db).toBe('postgres://u:[redacted]@h')
    expect(redacted.n).toBe(42)
    expect((redacted as Record<string, unknown>)['[redacted]']).toBe('as a key')
    // the input is not changed
    expect(value.raw).toBe(`key=${FORMS.raw}.`)
  })

  it('R6: redact of an error message string, and no-ops', () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET })
    const error = { error: { message: `card declined for ${SECRET}` } }
    expect(store.redact(error)).toEqual({ error: { message: 'card declined for [redacted]' } })
    expect(store.redact(undefined)).toBeUndefined()
    const value = { a: SECRET }
    expect(NO_SECRETS.redact(value)).toBe(value)
  })

  describe('base64 of a longer string that holds the secret (Bearer tokens, HTTP Basic)', () => {
    // the filler's length mod 3 is the secret's byte offset in the encoded string
    const FILLERS = ['Bearer ', ' Bearer ', '  Bearer ', 'bob:', 'user:', 'admin:']
    const CASES = FILLERS.flatMap((filler) =>
      (['base64', 'base64url'] as const).map((encoding) => [encoding, filler, filler.length % 3] as const),
    )

    it('the cases cover byte offsets 0, 1 and 2 for both kinds, in both alphabets (precondition)', () => {
      for (const kind of ['Bearer', ':']) {
        expect(new Set(FILLERS.filter((f) => f.includes(kind)).map((f) => f.length % 3))).toEqual(new Set([0, 1, 2]))
      }
      // with text after the secret, its own full base64 is in none of them: only a core can find them
      for (const [encoding, filler] of CASES) {
        expect(Buffer.from(`${filler}${SECRET};expires=never`).toString(encoding)).not.toContain(
          Buffer.from(SECRET).toString(encoding).replace(/=+$/, ''),
        )
      }
    })

    it.each(CASES)(
      'R6: %s of "%s<secret>" (offset %i) is found, also with text after it, and redacted from its mixed first group on',
      (encoding, filler) => {
        const store = new SecretStore({ STRIPE_KEY: SECRET })
        const encoded = Buffer.from(filler + SECRET).toString(encoding)
        const withPadding = encoded.padEnd(Math.ceil(encoded.length / 4) * 4, '=')
        const withMore = Buffer.from(`${filler}${SECRET};expires=never`).toString(encoding)
        for (const text of [encoded, withPadding, withMore]) {
          expect(store.find(JSON.stringify({ authorization: `Basic ${text}` }))).toBe('STRIPE_KEY')
          expect(() => store.assertAbsent(JSON.stringify([text]), 'v')).toThrow(SecretInValueError)
        }
        // the groups of the filler alone stay; the group that mixes filler and secret bytes goes too
        const kept = Buffer.from(filler.slice(0, filler.length - (filler.length % 3))).toString(encoding)
        expect(store.redact({ authorization: `Basic ${encoded}` })).toEqual({ authorization: `Basic ${kept}[redacted]` })
        expect(store.redact(withPadding)).toBe(`${kept}[redacted]`)
        const redactedMore = store.redact(withMore)
        expect(redactedMore.startsWith(`${kept}[redacted]`)).toBe(true)
        expect(store.find(JSON.stringify(redactedMore))).toBeUndefined()
      },
    )

    it(`R6: a short secret is found by its full base64 forms, but not by a core under ${MIN_BASE64_CORE} chars`, () => {
      const short = 'abc123' // cores at offsets 1 and 2 are one group (4 chars): too short to be a form
      const store = new SecretStore({ PIN: short })
      expect(store.find(JSON.stringify(Buffer.from(short).toString('base64')))).toBe('PIN')
      expect(store.find(JSON.stringify(Buffer.from(`Token ${short}`).toString('base64')))).toBe('PIN') // offset 0: an 8-char core
      // "c12" at an aligned offset gives the offset-1 core of the secret, without the secret
      const unrelated = Buffer.from('xyzc12').toString('base64')
      expect(unrelated).toContain(Buffer.from('c12').toString('base64'))
      expect(store.find(JSON.stringify(unrelated))).toBeUndefined()
    })
  })

  it.each([
    ['lower', FORMS.hexLower],
    ['upper', FORMS.hexUpper],
  ])('R6: hex (%s case) of the secret, alone or inside hex of a longer string, is found and redacted', (_case, hex) => {
    const store = new SecretStore({ STRIPE_KEY: SECRET })
    const lowerLonger = Buffer.from(`user:${SECRET}`).toString('hex')
    const inLonger = _case === 'lower' ? lowerLonger : lowerLonger.toUpperCase()
    for (const text of [hex, inLonger]) expect(store.find(JSON.stringify({ digest: text }))).toBe('STRIPE_KEY')
    const prefixHex = inLonger.slice(0, 'user:'.length * 2)
    expect(store.redact({ a: hex, b: inLonger })).toEqual({ a: '[redacted]', b: `${prefixHex}[redacted]` })
  })

  it('R6: the secret in JSON inside a string inside JSON inside a string is found in the JSON of the value and redacted', () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET })
    // body holds JSON whose payload holds JSON of the token: escaped twice in body, three times in the value's JSON
    const value = { body: JSON.stringify({ payload: JSON.stringify({ token: SECRET }) }) }
    const encoded = JSON.stringify(value)
    // precondition: only the thrice-escaped form is in it, so the fewer-escaped forms cannot be what finds it
    for (const times of [0, 1, 2]) expect(encoded).not.toContain(jsonEscape(SECRET, times))
    expect(encoded).toContain(jsonEscape(SECRET, 3))
    expect(store.find(encoded)).toBe('STRIPE_KEY')
    const redacted = store.redact(value)
    expect(JSON.parse(JSON.parse(redacted.body).payload)).toEqual({ token: '[redacted]' })
    // one level deeper still: a string holding that whole value's JSON
    const deeper = { outer: encoded }
    expect(store.find(JSON.stringify(deeper))).toBe('STRIPE_KEY')
    expect(JSON.parse(JSON.parse(JSON.parse(store.redact(deeper).outer).body).payload)).toEqual({ token: '[redacted]' })
  })

  it("R6: no false positive: unrelated values, the secret's prefix, and another key with the same prefix in every encoding", () => {
    const store = new SecretStore({ STRIPE_KEY: SECRET, DB: 'pg-pass-123' })
    const other = 'sk_live_>>>?~"q\\OTHER-key-xyz'
    const texts = ['sk_live_', other, `Bearer ${other}`, `user:${other}`, 'hello world', JSON.stringify({ token: other })]
    const encoded = texts.flatMap((t) => [
      t,
      Buffer.from(t).toString('base64'),
      Buffer.from(t).toString('base64url'),
      Buffer.from(t).toString('hex'),
      Buffer.from(t).toString('hex').toUpperCase(),
      encodeURIComponent(t),
      JSON.stringify(JSON.stringify({ t })),
    ])
    const value = { encoded, n: 42, id: 'ch_1', digest: 'c3bc78'.repeat(10) }
    expect(store.find(JSON.stringify(value))).toBeUndefined()
    expect(store.redact(value)).toEqual(value)
  })
})
