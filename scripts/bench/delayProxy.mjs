// A TCP proxy that delays every chunk by DELAY ms in each direction, in order: a Redis as far as a
// link with that one-way latency (as a Redis on another host is). Run as its own process by
// latency.ts, so its timers do not share the measured process's event loop.
// `node scripts/bench/delayProxy.mjs <targetPort> <delayMs>`: prints `PROXY <port>` once listening.
import net from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout } from 'node:timers'

const [target, delay] = [Number(process.argv[2]), Number(process.argv[3] ?? 1)]

function pipe(from, to) {
  const queue = []
  let timer = null
  const flush = () => {
    timer = null
    const now = performance.now()
    while (queue.length > 0 && queue[0][0] <= now) to.write(queue.shift()[1])
    if (queue.length > 0) timer = setTimeout(flush, queue[0][0] - now)
  }
  from.on('data', (chunk) => {
    queue.push([performance.now() + delay, chunk])
    timer ??= setTimeout(flush, delay)
  })
  from.on('close', () => to.destroy())
  from.on('error', () => to.destroy())
}

const server = net.createServer((client) => {
  client.setNoDelay(true)
  const upstream = net.connect(target, '127.0.0.1')
  upstream.setNoDelay(true)
  pipe(client, upstream)
  pipe(upstream, client)
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`PROXY ${server.address().port}\n`))
