// A MONITOR reader on a plain socket. ioredis's monitor mode switches to parsing MONITOR lines only
// once the MONITOR reply has been handled, so on a Redis that other clients keep busy the first lines
// arrive as replies to no command ("Command queue state error") and the profile fails. Here every
// line after the +OK is a MONITOR line by construction.
import net from 'node:net'

export interface MonitorReader {
  close(): void
}

/** Calls `onLine(args, source)` for each command Redis runs (source: `lua` or the client's address). */
export async function openMonitor(redisUrl: string, onLine: (args: string[], source: string) => void): Promise<MonitorReader> {
  const url = new URL(redisUrl)
  const socket = net.connect({ host: url.hostname || '127.0.0.1', port: Number(url.port || 6379) })
  socket.setNoDelay(true)
  const auth = url.password
    ? [
        url.username
          ? ['AUTH', decodeURIComponent(url.username), decodeURIComponent(url.password)]
          : ['AUTH', decodeURIComponent(url.password)],
      ]
    : []
  const db = url.pathname.length > 1 ? [['SELECT', url.pathname.slice(1)]] : []
  const commands = [...auth, ...db, ['MONITOR']]
  let pendingOks = commands.length
  let buffered = ''
  await new Promise<void>((resolve, reject) => {
    const fail = (error: Error) => reject(error)
    socket.once('error', fail)
    socket.once('connect', () => {
      socket.write(commands.map(encode).join(''))
    })
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1')
      let end: number
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        if (line.startsWith('-')) return fail(new Error(`MONITOR: Redis answered ${line.slice(1)}`))
        if (pendingOks > 0) {
          pendingOks--
          if (pendingOks === 0) {
            socket.off('error', fail)
            socket.on('error', () => {}) // a reset while closing is of no interest to a profile
            resolve()
          }
          continue
        }
        const parsed = parseMonitorLine(line)
        if (parsed) onLine(parsed.args, parsed.source)
      }
    })
  })
  return { close: () => socket.destroy() }
}

function encode(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

/** `+1700000000.123456 [0 127.0.0.1:5555] "SET" "a\"b" "\x00"` → args and source; null if not such a line. */
export function parseMonitorLine(line: string): { args: string[]; source: string } | null {
  const open = line.indexOf('[')
  const close = line.indexOf(']', open)
  if (!line.startsWith('+') || open < 0 || close < 0) return null
  const header = line.slice(open + 1, close).split(' ')
  const source = header[1] ?? ''
  const args: string[] = []
  let i = close + 1
  while (i < line.length) {
    const start = line.indexOf('"', i)
    if (start < 0) break
    let value = ''
    let j = start + 1
    for (; j < line.length && line[j] !== '"'; j++) {
      if (line[j] !== '\\') {
        value += line[j]
        continue
      }
      const next = line[++j]
      if (next === 'x') {
        value += String.fromCharCode(parseInt(line.slice(j + 1, j + 3), 16))
        j += 2
      } else value += ESCAPES[next ?? ''] ?? next ?? ''
    }
    args.push(value)
    i = j + 1
  }
  return { args, source }
}

// the escapes Redis's sdscatrepr writes
const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '\\': '\\', '"': '"' }
