// `npm run example:chat`: the chat example in one process. It builds the page (vite), starts turn and
// tool workers, mounts the harness handler at /api and serves the page, on http://127.0.0.1:$PORT
// (default 3000; 0 picks a free port). Redis: REDIS_URL, else an embedded redis-server.
import { createReadStream, existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, extname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'
import { createHarnessHandler, toNodeListener } from '../../src/http/index.js'
import { createHarnessHost, createLogger } from '../../src/index.js'
import { resolveRedis } from '../../scripts/lib/redis.js'
import { chatExample } from './harness.js'

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, 'dist')
const say = (line: string) => process.stdout.write(`${line}\n`)

say('[1/3] Building the page (vite)...')
await build({ root: here, logLevel: 'warn', build: { outDir: dist, emptyOutDir: true } })

say('[2/3] Starting Redis, workers and the handler...')
const redis = await resolveRedis(say)
const host = createHarnessHost({
  redis: redis.url,
  harnesses: [chatExample],
  prefix: 'example-chat',
  logger: createLogger({ level: 'warn' }),
})
await host.ready()
const workers = host.startWorkers({ concurrency: 10 })
// an example: every caller may use every thread; a real app returns its user here, and scopes threads with canAccess
const api = toNodeListener(createHarnessHandler({ host, harness: chatExample, authorize: () => ({ user: 'example' }) }))

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
}
const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname
  if (path.startsWith('/api/')) return api(req, res)
  const file = normalize(join(dist, path === '/' ? 'index.html' : path))
  if (!file.startsWith(dist) || !existsSync(file)) {
    res.writeHead(404).end('Not found')
    return
  }
  res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' })
  createReadStream(file).pipe(res)
})
server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  say(`[3/3] Open http://127.0.0.1:${(server.address() as AddressInfo).port}/ (Ctrl-C stops)`)
})

const stop = async () => {
  server.close()
  await workers.close({ timeoutMs: 5_000 })
  await host.close({ timeoutMs: 2_000 })
  await redis.stop()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())
