import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/errors/index.js'
import { ProcessLiveness, workerLivenessEnabled } from '../../src/liveness/index.js'
import { parseClientList } from '../../src/log/workerLiveness.js'

describe('worker liveness (docs/decisions/worker-liveness.md)', () => {
  it('on by default; DH_WORKER_LIVENESS=off turns it off; the host option wins; another value is a ConfigError', () => {
    expect(workerLivenessEnabled(undefined, undefined)).toBe(true)
    expect(workerLivenessEnabled(undefined, ' OFF ')).toBe(false)
    expect(workerLivenessEnabled(false, 'on')).toBe(false)
    expect(workerLivenessEnabled(true, 'off')).toBe(true)
    expect(() => workerLivenessEnabled(undefined, 'no')).toThrow(ConfigError)
    expect(() => workerLivenessEnabled(undefined, 'no')).toThrow(/DH_WORKER_LIVENESS="no": use "on" or "off"/)
  })

  it("a process's connection is named after it, and so is every lock token of its workers; a token of no such process names none", () => {
    const process = new ProcessLiveness()
    expect(process.connectionName).toMatch(/^dh-live-[0-9a-f]{16}$/)
    expect(ProcessLiveness.connectionOf(`${process.tokenPrefix}3:17`)).toBe(process.connectionName)
    expect(ProcessLiveness.connectionOf(`${process.tokenPrefix}0:now2`)).toBe(process.connectionName)
    // BullMQ's own worker ids (a process with liveness off, another library version) name no process
    expect(ProcessLiveness.connectionOf('6f1c2a9e-54b7-4a5e-9d0c-1f0e2d3c4b5a:3')).toBeUndefined()
    expect(new ProcessLiveness().id).not.toBe(process.id)
  })

  it('CLIENT LIST lines: the named connections with their age; unnamed ones left out', () => {
    const listing = [
      'id=3 addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=8 name=dh-live-0123456789abcdef age=12 idle=0 flags=N db=0',
      'id=4 addr=127.0.0.1:5001 laddr=127.0.0.1:6379 fd=9 name= age=3 idle=3 flags=N db=0',
      'id=5 addr=127.0.0.1:5002 laddr=127.0.0.1:6379 fd=10 name=other age=0 idle=0 flags=b db=0',
      '',
    ].join('\n')
    expect(parseClientList(listing)).toEqual([
      { name: 'dh-live-0123456789abcdef', ageS: 12 },
      { name: 'other', ageS: 0 },
    ])
  })
})
