import { createServer } from 'node:http'
import { createHash, timingSafeEqual } from 'node:crypto'
import { ConfigError, UsageError } from '../../errors/index.js'
import type { HarnessHost } from '../../harness/host.js'
import type { Harness } from '../../harness/defineHarness.js'
import { toNodeListener } from '../../http/index.js'
import { createMcpServer } from '../../mcp/index.js'
import { listenHost, portOption, stringOption, type Command } from '../command.js'
import { flagsToEnv, startProcess } from '../processEnv.js'

const LOCAL_NAMES = ['127.0.0.1', 'localhost', '[::1]']

/** Bearer tokens compared in constant time (their digests, so the lengths leak nothing either). */
function sameToken(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest()
  return timingSafeEqual(digest(given), digest(expected))
}

/**
 * Who may call: with a token, the requests that send it (one principal, `mcp-token`); without one,
 * every request the Host check lets through (createMcpServer's allowedHosts: this machine's names).
 */
function authorizeFor(token: string | undefined) {
  return (request: Request) => {
    if (!token) return { id: 'local' }
    const bearer = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
    return bearer !== undefined && sameToken(bearer, token) ? { id: 'mcp-token' } : null
  }
}

function harnessToServe(harnesses: readonly Harness[], name: string | undefined): Harness {
  const found = name === undefined && harnesses.length === 1 ? harnesses[0] : harnesses.find((h) => h.name === name)
  if (found) return found
  const names = harnesses.map((h) => h.name).join(', ')
  throw new ConfigError(
    name === undefined
      ? `The module has ${harnesses.length} harnesses (${names}): pass --harness <name>.`
      : `No harness "${name}" in the module: ${names}.`,
  )
}

/** `harness mcp`: the MCP server of a harness module, with its workers in the same process unless --concurrency 0. */
export const mcp: Command = {
  name: 'mcp',
  args: '[harness-module]',
  summary: "Serves a harness's durable tools over MCP (Streamable HTTP at /mcp): tools/call and MCP Tasks that any server process answers.",
  details: [
    'Without a token it listens on 127.0.0.1 only and answers only Host 127.0.0.1, localhost or [::1] with its port.',
    'With --token (or MCP_TOKEN) every request needs Authorization: Bearer <token>.',
    'Env: REDIS_URL, DH_PREFIX, HARNESS_MODULE, MCP_TOKEN, PORT, CONCURRENCY, LOG_LEVEL.',
  ],
  options: {
    port: { type: 'string', short: 'p', help: 'port (env PORT; default 3001; 0 picks a free one)' },
    host: { type: 'string', help: 'interface to listen on (default 127.0.0.1; another needs --token)' },
    token: { type: 'string', help: 'required bearer token (env MCP_TOKEN)' },
    harness: { type: 'string', help: "the harness to serve (default the module's only one)" },
    concurrency: { type: 'string', help: 'workers in this process, jobs at once per queue (env CONCURRENCY; default 10; 0: none)' },
  },
  required: 0,
  optional: 1,
  async run({ args, values }) {
    const port = portOption(values, 3001)
    const concurrency = Number(values.concurrency ?? process.env.CONCURRENCY ?? 10)
    if (!Number.isInteger(concurrency) || concurrency < 0)
      throw new UsageError(`--concurrency must be a whole number, not ${JSON.stringify(values.concurrency)}.`)
    const token = stringOption(values, 'token') ?? process.env.MCP_TOKEN
    const hostname = listenHost(values, token, 'MCP_TOKEN', 'the server runs tools for whoever calls')
    flagsToEnv(values, { redis: 'REDIS_URL', prefix: 'DH_PREFIX' })
    const module = args[0] ?? stringOption(values, 'module')
    await startProcess('mcp', module === undefined ? [] : [module], (host: HarnessHost, logger, harnesses) => {
      const harness = harnessToServe(harnesses, stringOption(values, 'harness'))
      let listener: ReturnType<typeof toNodeListener> | undefined
      const server = createServer((req, res) => {
        if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp' || !listener)
          return res
            .writeHead(404, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: 'The MCP endpoint is /mcp.', code: 'not_found' }))
        listener(req, res)
      })
      server.listen(port, hostname, () => {
        const address = server.address()
        const bound = typeof address === 'object' && address ? address.port : port
        // without a token only this machine's names are answered: a page of another name cannot reach it (DNS rebinding)
        const allowedHosts = token ? undefined : LOCAL_NAMES.map((name) => `${name}:${bound}`)
        listener = toNodeListener(
          createMcpServer({ host, harness, authorize: authorizeFor(token), ...(allowedHosts ? { allowedHosts } : {}) }),
        )
        logger.info({ url: `http://${hostname}:${bound}/mcp`, harness: harness.name }, 'MCP server listening')
        process.stdout.write(`MCP server: http://${hostname === '::1' ? '[::1]' : hostname}:${bound}/mcp\n`)
      })
      const workers = concurrency > 0 ? host.startWorkers({ concurrency }) : undefined
      return {
        close: async (options) => {
          server.closeAllConnections()
          await new Promise((resolve) => server.close(resolve))
          return workers?.close(options)
        },
      }
    })
    return 'running'
  },
}
