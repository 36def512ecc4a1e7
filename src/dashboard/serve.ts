import { serve } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Principal } from '../http/types.js'
import { createDashboard, type DashboardOptions } from './app.js'

/** Options of `serveDashboard`: those of `createDashboard`, and where to listen. */
export interface ServeDashboardOptions<P extends Principal = Principal> extends DashboardOptions<P> {
  /** 0 picks a free port. */
  port?: number
  /** Default 127.0.0.1: only this machine. */
  hostname?: string
}

/** Serves the dashboard on Node; resolves with its URL and a close. */
export function serveDashboard<P extends Principal>(options: ServeDashboardOptions<P>): Promise<{ url: string; close(): Promise<void> }> {
  const app = createDashboard(options)
  const hostname = options.hostname ?? '127.0.0.1'
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: options.port ?? 8080, hostname }, (info: AddressInfo) => {
      resolve({
        url: `http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${info.port}${options.basePath ?? ''}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      })
    })
    server.once('error', reject)
  })
}
