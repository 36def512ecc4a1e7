import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from 'pino'
import { metricsText, type StatsSource } from './metrics.js'

/** A /metrics endpoint for a worker or sweeper process (METRICS_PORT); resolves with its port and a close. */
export function serveMetrics(
  host: StatsSource & { readonly logger: Logger },
  port: number,
  hostname = '0.0.0.0',
): Promise<{ port: number; close(): void }> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end('Not found: GET /metrics\n')
    metricsText(host).then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (error: unknown) => {
        host.logger.warn({ err: error }, 'metrics: reading stats failed')
        res.writeHead(503).end('Stats unavailable; see the log.\n')
      },
    )
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, hostname, () => resolve({ port: portOf(server.address()), close: () => void server.close() }))
  })
}

/** The port of a listening TCP server's address (a pipe's address is a string: none of ours is one). */
function portOf(address: AddressInfo | string | null): number {
  if (typeof address !== 'object' || address === null) throw new Error(`The metrics server listens on ${address}, not a TCP port.`)
  return address.port
}
