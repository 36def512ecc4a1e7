// Talks to a Redis with Node built-ins only (raw RESP over net/tls): is it up, which process is it,
// and a free port for a new one. Used by redisServer.ts, which must not depend on ioredis.
import net from 'node:net'
import tls from 'node:tls'

function encodeCommand(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

interface RedisTarget {
  host: string
  port: number
  secure: boolean
  auth: string[][]
}

function parseRedisUrl(url: string): RedisTarget | undefined {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return undefined
  }
  if (target.protocol !== 'redis:' && target.protocol !== 'rediss:') return undefined
  const username = decodeURIComponent(target.username)
  const password = decodeURIComponent(target.password)
  return {
    host: target.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: Number(target.port || 6379),
    secure: target.protocol === 'rediss:',
    auth: password ? [username ? ['AUTH', username, password] : ['AUTH', password]] : [],
  }
}

// Sends raw RESP and resolves with what came back once `complete` accepts it,
// or undefined on a socket error, close or timeout.
async function exchange(
  target: RedisTarget,
  commands: string[][],
  timeoutMs: number,
  complete: (received: string) => boolean,
): Promise<string | undefined> {
  return new Promise<string | undefined>((resolve) => {
    const { host, port } = target
    const socket = target.secure ? tls.connect({ host, port, servername: host }) : net.connect({ host, port })
    let received = ''
    const finish = (reply: string | undefined): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve(reply)
    }
    const timer = setTimeout(() => finish(undefined), timeoutMs)
    socket.on('error', () => finish(undefined))
    socket.on('close', () => finish(undefined))
    socket.on('data', (chunk: Buffer) => {
      // latin1 keeps one char per byte, so RESP bulk lengths can be compared directly.
      received += chunk.toString('latin1')
      if (complete(received)) finish(received)
    })
    socket.write(commands.map(encodeCommand).join(''))
  })
}

/** Whether a Redis answers PING at `url` within `timeoutMs` (no client library, no retries). */
export async function isRedisReachable(url: string, timeoutMs = 1_000): Promise<boolean> {
  const target = parseRedisUrl(url)
  if (target === undefined) return false
  const commands = [...target.auth, ['PING']]
  // AUTH and PING both answer with a single-line reply, so counting lines suffices.
  const reply = await exchange(target, commands, timeoutMs, (received) => received.split('\r\n').length > commands.length)
  return reply?.split('\r\n')[commands.length - 1] === '+PONG'
}

// The pid answering on our own port: tells our child apart from another
// server that already holds the port.
export async function serverPid(url: string, timeoutMs: number): Promise<number | undefined> {
  const target = parseRedisUrl(url)
  if (target === undefined) return undefined
  const reply = await exchange(target, [...target.auth, ['INFO', 'server']], timeoutMs, (received) => {
    // skip the +OK of AUTH (a single line) to reach INFO's bulk reply
    const rest = received.split('\r\n').slice(target.auth.length).join('\r\n')
    const header = /^\$(\d+)\r\n/.exec(rest)
    return header === null ? rest.includes('\r\n') : rest.length >= header[0].length + Number(header[1]) + 2
  })
  const pid = reply === undefined ? undefined : /\r\nprocess_id:(\d+)\r\n/.exec(reply)?.[1]
  return pid === undefined ? undefined : Number(pid)
}

export async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      if (typeof address !== 'object' || address === null) return reject(new Error(`Listening on ${address}, not a TCP port.`))
      server.close(() => resolve(address.port))
    })
  })
}
