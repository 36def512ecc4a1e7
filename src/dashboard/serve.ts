import { serve } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Principal } from '../http/handler.js'
import { createDashboard, type DashboardOptions } from './app.js'

/** Options of `serveDashboard`: those of `createDashboard`, and where to listen. */
export interface ServeDashboardOptions<P extends Principal = Principal> extends DashboardOptions<P> {
  /** 0 picks a free port. */
  port?: number
  /** Default 127.0.0.1: only this machine. */
  hostname?: string
}

const LOOPBACK = ['127.0.0.1', 'localhost', '::1']

/**
 * Serves the dashboard on Node; resolves with its URL and a close. On a loopback interface (the
 * default) it answers only the Host names of this machine with its port (127.0.0.1, localhost,
 * [::1]), unless `allowedHosts` says otherwise: a page of another name rebound to 127.0.0.1 gets 403.
 */
export function serveDashboard<P extends Principal>(options: ServeDashboardOptions<P>): Promise<{ url: string; close(): Promise<void> }> {
  const hostname = options.hostname ?? '127.0.0.1'
  const bracketed = (name: string) => (name.includes(':') ? `[${name}]` : name)
  // filled in once the port is known (port 0 picks one), before any request is read
  const loopbackHosts: string[] = []
  const defaultHosts = !options.allowedHosts && LOOPBACK.includes(hostname)
  const app = createDashboard({ ...options, ...(defaultHosts ? { allowedHosts: loopbackHosts } : {}) })
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: options.port ?? 8080, hostname }, (info: AddressInfo) => {
      const port = info.port
      loopbackHosts.push(...LOOPBACK.flatMap((name) => [`${bracketed(name)}:${port}`, ...(port === 80 ? [bracketed(name)] : [])]))
      resolve({
        url: `http://${bracketed(hostname)}:${port}${options.basePath ?? ''}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      })
    })
    server.once('error', reject)
  })
}
