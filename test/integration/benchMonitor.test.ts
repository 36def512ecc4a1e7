// The bench's MONITOR reader (scripts/bench/monitor.ts) on a Redis that other clients keep busy: every
// line after its +OK is a command line, parsed back to the exact arguments Redis ran (quotes,
// backslashes, CR/LF and binary bytes included), so a profile never trips over another client's traffic.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { openMonitor, parseMonitorLine } from '../../scripts/bench/monitor.js'
import { getRedisUrl } from '../rig.js'

const clients: Redis[] = []
afterAll(() => clients.forEach((c) => c.disconnect()))

describe('bench MONITOR reader', () => {
  it('parses the escapes Redis writes', () => {
    expect(parseMonitorLine('+1700000000.123456 [0 127.0.0.1:5555] "SET" "a\\"b" "\\x00\\r\\n\\\\"')).toEqual({
      source: '127.0.0.1:5555',
      args: ['SET', 'a"b', '\x00\r\n\\'],
    })
    expect(parseMonitorLine('+1700000000.1 [0 lua] "HGET" "k" "f"')).toEqual({ source: 'lua', args: ['HGET', 'k', 'f'] })
    expect(parseMonitorLine('+OK')).toBeNull()
  })

  it('reads every command of a busy shared Redis from its first line on, with exact arguments', async () => {
    const url = await getRedisUrl()
    const tag = `mon-${randomBytes(4).toString('hex')}`
    const busy = new Redis(url)
    const mine = new Redis(url)
    clients.push(busy, mine)
    // other traffic, running before and while the reader opens
    let stop = false
    const traffic = (async () => {
      while (!stop) await busy.zrangebyscore(`other-${tag}:timers`, 0, Date.now(), 'LIMIT', 0, 10)
    })()
    const seen: string[][] = []
    const monitor = await openMonitor(url, (args) => {
      if (args.some((a) => a.includes(tag))) seen.push(args)
    })
    const odd = `${tag} "quoted" \\ \r\n \x01 é`
    for (let i = 0; i < 50; i++) await mine.set(`${tag}:${i}`, odd)
    await new Promise((r) => setTimeout(r, 100))
    stop = true
    await traffic
    monitor.close()
    const sets = seen.filter((a) => a[0]?.toUpperCase() === 'SET' && a[1]?.startsWith(`${tag}:`))
    expect(sets).toHaveLength(50)
    // é arrives as its UTF-8 bytes, one latin1 character each
    expect(sets[0]![2]).toBe(Buffer.from(odd).toString('latin1'))
  })
})
