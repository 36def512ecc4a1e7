import { timingSafeEqual } from 'node:crypto'
import { UsageError } from '../../errors.js'
import type { Command } from '../command.js'
import { connect, harnessesFrom } from '../connect.js'
import { print } from '../output.js'

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

/**
 * The dashboard's authorize for the CLI: with a token, a request needs it (Authorization: Bearer, or
 * the dh_token cookie the printed link sets through ?token=); with none, only this machine may connect.
 */
function tokenAuthorize(token: string | undefined) {
  return (request: Request) => {
    if (!token) return { local: true }
    const bearer = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
    const cookie = /(?:^|;\s*)dh_token=([^;]+)/.exec(request.headers.get('cookie') ?? '')?.[1]
    const query = new URL(request.url).searchParams.get('token') ?? undefined
    const given = bearer ?? (cookie ? decodeURIComponent(cookie) : undefined) ?? query
    return given !== undefined && same(given, token) ? { token: true } : null
  }
}

export const dashboard: Command = {
  name: 'dashboard',
  args: '',
  summary: 'Serves the web dashboard: sessions, live timelines, questions and approvals to answer, queue views (bull-board), metrics.',
  details: [
    'Without a token it listens on 127.0.0.1 only. With --token (or DASHBOARD_TOKEN) every request needs it:',
    'open the printed link once (?token= sets a cookie), or send Authorization: Bearer <token>.',
  ],
  options: {
    port: { type: 'string', short: 'p', help: 'port (env PORT; default 8080; 0 picks a free one)' },
    host: { type: 'string', help: 'interface to listen on (default 127.0.0.1; another needs --token)' },
    token: { type: 'string', help: 'required bearer token (env DASHBOARD_TOKEN)' },
  },
  required: 0,
  async run({ values }) {
    const port = Number(values.port ?? process.env.PORT ?? 8080)
    if (!Number.isInteger(port) || port < 0 || port > 65_535)
      throw new UsageError(`--port must be a port number, not ${JSON.stringify(values.port)}.`)
    const token = (values.token as string | undefined) ?? process.env.DASHBOARD_TOKEN
    const hostname = (values.host as string | undefined) ?? '127.0.0.1'
    if (!token && !['127.0.0.1', 'localhost', '::1'].includes(hostname))
      throw new UsageError(
        `Listening on ${hostname} needs --token (or DASHBOARD_TOKEN): the dashboard answers questions and approves calls.`,
      )
    const host = await connect(values, await harnessesFrom(values, true))
    // loaded here: the other commands do not pay for Hono and bull-board
    const { serveDashboard } = await import('../../dashboard/index.js')
    const server = await serveDashboard({ host, port, hostname, authorize: tokenAuthorize(token) })
    print(`Dashboard: ${server.url}${token ? '?token=<your token>' : ''}`)
    const stop = async () => {
      await server.close()
      await host.close({ timeoutMs: 2_000 })
      process.exit(0)
    }
    process.once('SIGINT', () => void stop())
    process.once('SIGTERM', () => void stop())
    return 'running'
  },
}
