import { listenHost, portOption, stringOption, type Command } from '../command.js'
import { connect, harnessesFrom } from '../connect.js'
import { print } from '../output.js'

export const dashboard: Command = {
  name: 'dashboard',
  args: '',
  summary: 'Serves the web dashboard: sessions, live timelines, questions and approvals to answer, queue views (bull-board), metrics.',
  details: [
    'Without a token it listens on 127.0.0.1 only and answers only Host 127.0.0.1, localhost or [::1] with its port.',
    'With --token (or DASHBOARD_TOKEN) every request needs it: open the printed link once (?token= sets an HttpOnly',
    'cookie and is stripped from the URL), or send Authorization: Bearer <token>. Writes need an Origin of the dashboard.',
  ],
  options: {
    port: { type: 'string', short: 'p', help: 'port (env PORT; default 8080; 0 picks a free one)' },
    host: { type: 'string', help: 'interface to listen on (default 127.0.0.1; another needs --token)' },
    token: { type: 'string', help: 'required bearer token (env DASHBOARD_TOKEN)' },
  },
  required: 0,
  async run({ values }) {
    const port = portOption(values, 8080)
    const token = stringOption(values, 'token') ?? process.env.DASHBOARD_TOKEN
    const hostname = listenHost(values, token, 'DASHBOARD_TOKEN', 'the dashboard answers questions and approves calls')
    const host = await connect(values, await harnessesFrom(values, true))
    // loaded here: the other commands do not pay for Hono and bull-board
    const { serveDashboard } = await import('../../dashboard/index.js')
    // without a token, only this machine can connect (loopback) and only under its own names (serveDashboard's Host check)
    const server = await serveDashboard({ host, port, hostname, ...(token ? { token } : { authorize: () => ({ local: true }) }) })
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
