import { SecretInValueError } from '../errors.js'

/**
 * Session secrets: held in memory only, read with `get`, and searched for in every value that would be
 * stored (R6). A secret counts as found when a value's JSON holds it as is, JSON-escaped, base64
 * (standard or URL alphabet) or URL-encoded.
 */
export interface Secrets {
  get(name: string): string | undefined
}

const REDACTED = '[redacted]'

export class SecretStore implements Secrets {
  private readonly forms: Array<{ name: string; form: string }> = []

  constructor(private readonly values: Readonly<Record<string, string>> = {}) {
    for (const [name, secret] of Object.entries(values)) {
      if (typeof secret !== 'string' || secret.length === 0) continue
      const b64 = Buffer.from(secret).toString('base64')
      const candidates = new Set([
        secret,
        JSON.stringify(secret).slice(1, -1),
        b64,
        b64.replace(/=+$/, ''),
        Buffer.from(secret).toString('base64url'),
        encodeURIComponent(secret),
      ])
      for (const form of candidates) this.forms.push({ name, form })
    }
    // longest first, so redaction replaces a whole encoded form before any shorter one inside it
    this.forms.sort((a, b) => b.form.length - a.form.length)
  }

  get empty(): boolean {
    return this.forms.length === 0
  }

  get(name: string): string | undefined {
    return this.values[name]
  }

  /** The name of the first secret found in `encodedJson`, if any. */
  find(encodedJson: string): string | undefined {
    return this.forms.find(({ form }) => encodedJson.includes(form))?.name
  }

  /** Throws when a value that is about to be stored holds a secret. */
  assertAbsent(encodedJson: string | undefined, what: string): void {
    if (encodedJson === undefined || this.empty) return
    const name = this.find(encodedJson)
    if (name) throw new SecretInValueError(what, name)
  }

  /** Replaces every occurrence of a secret in a JSON value with `[redacted]` (results and errors). */
  redact<T>(value: T): T {
    if (this.empty || value === undefined) return value
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') {
        let out = v
        for (const { form } of this.forms) if (out.includes(form)) out = out.split(form).join(REDACTED)
        return out
      }
      if (Array.isArray(v)) return v.map(walk)
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k) as string, walk(x)]))
      return v
    }
    return walk(value) as T
  }
}

export const NO_SECRETS = new SecretStore()
