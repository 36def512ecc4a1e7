// What clients send to Redis, seen by MONITOR on a plain socket: the tests that count a path's commands.
import { connect } from 'node:net'

/** A command line MONITOR printed: the client's address (`source`) and its arguments as Redis quotes them. */
export interface MonitoredCommand {
  source: string
  line: string
}

/**
 * The commands naming `prefix` that clients send from now on (`+<time> [<db> <addr>] "<arg>" ...`),
 * leaving out the ones scripts run; `defer` closes the socket when the test ends.
 */
export async function monitorCommands(url: string, prefix: string, defer: (close: () => void) => void): Promise<MonitoredCommand[]> {
  const { hostname, port } = new URL(url)
  const monitor = connect(Number(port), hostname)
  defer(() => monitor.destroy())
  const sent: MonitoredCommand[] = []
  let rest = ''
  monitor.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString('latin1')).split('\r\n')
    rest = lines.pop()!
    for (const line of lines) {
      const match = /^\+\S+ \[\d+ (\S+)\] (.*)$/.exec(line)
      if (match && match[1] !== 'lua' && match[2]!.includes(prefix)) sent.push({ source: match[1]!, line: match[2]! })
    }
  })
  await new Promise<void>((resolve) => {
    monitor.write('MONITOR\r\n')
    monitor.once('data', () => resolve())
  })
  return sent
}
