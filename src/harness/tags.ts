import { InvalidTagsError } from '../errors/index.js'
import type { InputTags } from '../log/index.js'

const TAG_KEY = /^[A-Za-z0-9._-]{1,64}$/
const MAX_TAGS = 20
const MAX_TAG_VALUE = 256
const MAX_PRINCIPAL = 200

/** Checks `prompt(text, { metadata, principal })` before anything is written (InvalidTagsError). */
export function checkTags(options: InputTags): InputTags {
  const { metadata, principal } = options
  if (principal !== undefined) checkPrincipal(principal)
  if (metadata === undefined) return principal === undefined ? {} : { principal }
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    throw new InvalidTagsError('metadata', metadata, 'pass an object of string values')
  const entries = Object.entries(metadata)
  if (entries.length > MAX_TAGS) throw new InvalidTagsError('metadata', metadata, `at most ${MAX_TAGS} tags`)
  for (const [key, value] of entries) {
    if (!TAG_KEY.test(key)) throw new InvalidTagsError('metadata key', key, `use 1 to 64 characters from [A-Za-z0-9._-]`)
    if (typeof value !== 'string' || value.length > MAX_TAG_VALUE)
      throw new InvalidTagsError(`metadata.${key}`, value, `a tag's value is a string of at most ${MAX_TAG_VALUE} characters`)
  }
  return { metadata: { ...metadata }, ...(principal !== undefined ? { principal } : {}) }
}

/** A principal as the log stores it: a non-empty string of at most 200 characters. */
export function checkPrincipal(principal: unknown): asserts principal is string {
  if (typeof principal !== 'string' || principal.length === 0 || principal.length > MAX_PRINCIPAL)
    throw new InvalidTagsError('principal', principal, `pass a string id of 1 to ${MAX_PRINCIPAL} characters`)
}

/**
 * A principal object's own id, whole: its `id`, else `sub` (a JWT's subject), else `email`, else
 * `name`, the first that is a non-empty string or a number; undefined when it has none.
 */
export function wholePrincipalId(principal: object | null | undefined): string | undefined {
  if (!principal) return undefined
  for (const key of ['id', 'sub', 'email', 'name']) {
    const value: unknown = Reflect.get(principal, key)
    if ((typeof value === 'string' && value.length > 0) || typeof value === 'number') return String(value)
  }
  return undefined
}

/**
 * The string id the log records for a principal object (what `authorize` returned): its whole id
 * (`wholePrincipalId`) cut to 200 characters; undefined when it has none (nothing is recorded then).
 */
export function principalId(principal: object | null | undefined): string | undefined {
  return wholePrincipalId(principal)?.slice(0, MAX_PRINCIPAL)
}
