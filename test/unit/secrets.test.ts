// R6 at the unit level: a secret is found in every encoded form a value could carry, and redacted.
import { describe, expect, it } from 'vitest'
import { SecretInValueError } from '../../src/errors.js'
import { NO_SECRETS, SecretStore } from '../../src/tool/secrets.js'

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
}

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

  it.each(Object.entries(FORMS))('R6: assertAbsent throws SecretInValueError for the %s form, naming the secret, not its value', (_form, text) => {
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
  })

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
})
