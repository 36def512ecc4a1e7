// Redaction of Redis credentials in log lines and error messages (src/credentials.ts).
import { describe, expect, it } from 'vitest'
import { isAuthFailure, redactCredentials, serializeError } from '../../src/credentials.js'
import { RedisAuthError, RedisUnavailableError } from '../../src/errors/index.js'

describe('redactCredentials', () => {
  it.each([
    ['redis://user:s3cret@127.0.0.1:6380', 'redis://user:***@127.0.0.1:6380'],
    ['redis://:s3cret@127.0.0.1:6380/2', 'redis://:***@127.0.0.1:6380/2'],
    ['rediss://user:p%40ss:w0rd@redis.example.com', 'rediss://user:***@redis.example.com'],
    ['connect to redis://a:x@h1:1 then redis://b:y@h2:2', 'connect to redis://a:***@h1:1 then redis://b:***@h2:2'],
    ['redis://user@127.0.0.1:6379', 'redis://user@127.0.0.1:6379'],
    ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'],
    ['no url here: a:b@c', 'no url here: a:b@c'],
  ])('%s', (text, redacted) => {
    expect(redactCredentials(text)).toBe(redacted)
  })
})

describe('serializeError', () => {
  it("redacts ioredis's AUTH arguments and URLs in the text, and leaves the error itself alone", () => {
    const err = Object.assign(new Error('WRONGPASS invalid username-password pair (redis://u:s3cret@h:1)'), {
      command: { name: 'hello', args: ['3', 'AUTH', 'default', 's3cret'] },
    })
    const out = serializeError(err) as { message: string; stack: string; command: { name: string; args: unknown } }
    expect(JSON.stringify(out)).not.toContain('s3cret')
    expect(out.message).toBe('WRONGPASS invalid username-password pair (redis://u:***@h:1)')
    expect(out.command).toEqual({ name: 'hello', args: ['***'] })
    expect(err.command.args).toEqual(['3', 'AUTH', 'default', 's3cret'])
  })

  it('keeps the arguments of other commands', () => {
    const err = Object.assign(new Error('boom'), { command: { name: 'get', args: ['key'] } })
    expect((serializeError(err) as { command: unknown }).command).toEqual({ name: 'get', args: ['key'] })
  })
})

describe('Redis errors', () => {
  it('never carry the password in their message', () => {
    const url = 'redis://user:s3cret@127.0.0.1:6380'
    expect(new RedisUnavailableError(url).message).toBe(
      'Cannot reach Redis at redis://user:***@127.0.0.1:6380. Start one (docker compose up -d redis) or set REDIS_URL.',
    )
    const auth = new RedisAuthError(url, 'WRONGPASS invalid username-password pair or user is disabled.')
    expect(auth.code).toBe('redis_auth_failed')
    expect(auth.message).toContain('redis://user:***@127.0.0.1:6380: authentication failed')
    expect(auth.message).not.toContain('s3cret')
  })

  it('tells a refused password from other errors', () => {
    expect(isAuthFailure(new Error('WRONGPASS invalid username-password pair or user is disabled.'))).toBe(true)
    expect(isAuthFailure(new Error('NOAUTH Authentication required.'))).toBe(true)
    expect(isAuthFailure(new Error('connect ECONNREFUSED 127.0.0.1:6380'))).toBe(false)
  })
})
