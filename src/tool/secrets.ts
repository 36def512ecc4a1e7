import { SecretInValueError } from '../errors/index.js'

/**
 * Session secrets: held in memory only, read with `get`, and searched for in every value that would be
 * stored (R6). A secret counts as found when a value's JSON holds it as is, JSON-escaped up to four
 * times (strings that hold JSON nested three deep), or in any of these
 * encodings of the secret (and of its JSON-escaped text, e.g. a base64 JWT payload): base64 (standard
 * and URL alphabets, with and without padding), base64 of a longer string that contains it (e.g.
 * `Bearer <secret>`, HTTP Basic `user:<secret>`), hex (lower and upper case), URL-encoded.
 */
export interface Secrets {
  get(name: string): string | undefined
}

const REDACTED = '[redacted]'

/**
 * A base64 core (see `base64Cores`) shorter than this is not a form: 8 chars are 6 secret bytes
 * (48 bits), enough not to turn up in unrelated base64 by chance. A secret that short is still found
 * by its full base64 forms, just not inside base64 of a longer string.
 */
export const MIN_BASE64_CORE = 8

/** `text` is what is searched for; `pattern`, when set, is what redaction replaces (text and edges). */
interface Form {
  name: string
  text: string
  pattern?: RegExp
}

const jsonEscape = (text: string) => JSON.stringify(text).slice(1, -1)
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
const ALPHABETS = [
  { encoding: 'base64', char: '[A-Za-z0-9+/]' },
  { encoding: 'base64url', char: '[A-Za-z0-9_-]' },
] as const

/**
 * base64 of a string that holds the secret at byte offset o depends on o mod 3. For each o, the
 * chars of base64(o filler bytes + secret) that depend on secret bytes only form the core: the
 * first 4-char group is skipped when o > 0 (it mixes filler and secret), and only full groups are
 * kept at the end. Redaction also takes the mixed groups at both edges (they carry secret bits).
 */
function base64Cores(bytes: Buffer): Array<{ text: string; pattern: RegExp }> {
  const cores: Array<{ text: string; pattern: RegExp }> = []
  for (const offset of [0, 1, 2]) {
    const skip = (3 - offset) % 3 // secret bytes in the mixed first group
    const full = Math.floor((bytes.length - skip) / 3) * 3
    if (full <= 0) continue
    const tail = bytes.length - skip - full > 0
    for (const { encoding, char } of ALPHABETS) {
      const text = bytes.subarray(skip, skip + full).toString(encoding)
      if (text.length < MIN_BASE64_CORE) continue
      const lead = offset > 0 ? `${char}{0,4}` : ''
      const trail = tail ? `${char}{0,4}={0,2}` : ''
      cores.push({ text, pattern: new RegExp(`${lead}${escapeRegExp(text)}${trail}`, 'g') })
    }
  }
  return cores
}

/** Every form of one secret, each once. */
function formsOf(secret: string): Array<Omit<Form, 'name'>> {
  // JSON in a string in JSON...: a string holding JSON of an object whose string holds JSON of the
  // secret has it escaped twice, and the value's JSON three times. Detection reads the value's JSON,
  // redaction the decoded strings (one level less), so four levels cover that nesting both ways.
  const escaped = [secret]
  for (let level = 1; level <= 4; level++) escaped.push(jsonEscape(escaped[level - 1]!))
  const forms: Array<Omit<Form, 'name'>> = escaped.map((text) => ({ text }))
  for (const source of new Set(escaped.slice(0, 2))) {
    const bytes = Buffer.from(source)
    const b64 = bytes.toString('base64')
    const b64url = bytes.toString('base64url')
    const hex = bytes.toString('hex')
    const texts = [b64, b64.replace(/=+$/, ''), b64url, b64url.padEnd(b64.length, '='), hex, hex.toUpperCase(), encodeURIComponent(source)]
    forms.push(...texts.map((text) => ({ text })), ...base64Cores(bytes))
  }
  const seen = new Set<string>()
  return forms.filter(({ text }) => !seen.has(text) && seen.add(text))
}

export class SecretStore implements Secrets {
  private readonly forms: Form[] = []

  constructor(private readonly values: Readonly<Record<string, string>> = {}) {
    // precomputed once: `find` runs on every value that is stored
    for (const [name, secret] of Object.entries(values)) {
      if (typeof secret !== 'string' || secret.length === 0) continue
      for (const form of formsOf(secret)) this.forms.push({ name, ...form })
    }
    // longest first, so redaction replaces a whole encoded form before any shorter one inside it
    this.forms.sort((a, b) => b.text.length - a.text.length)
  }

  get empty(): boolean {
    return this.forms.length === 0
  }

  get(name: string): string | undefined {
    return this.values[name]
  }

  /** The name of the first secret found in `encodedJson`, if any. */
  find(encodedJson: string): string | undefined {
    return this.forms.find(({ text }) => encodedJson.includes(text))?.name
  }

  /** Throws when a value that is about to be stored holds a secret. */
  assertAbsent(encodedJson: string | undefined, what: string, hint?: string): void {
    if (encodedJson === undefined || this.empty) return
    const name = this.find(encodedJson)
    if (name) throw new SecretInValueError(what, name, hint)
  }

  /** Replaces every occurrence of a secret in a JSON value with `[redacted]` (results and errors). */
  redact<T>(value: T): T {
    if (this.empty || value === undefined) return value
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return this.redactText(v)
      if (Array.isArray(v)) return v.map(walk)
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [this.redactText(k), walk(x)]))
      return v
    }
    return walk(value) as T
  }

  private redactText(value: string): string {
    let out = value
    for (const { text, pattern } of this.forms) {
      if (out.includes(text)) out = pattern ? out.replace(pattern, REDACTED) : out.split(text).join(REDACTED)
    }
    return out
  }
}

export const NO_SECRETS = new SecretStore()
