// The handler probed as an attacker would (issue 21): authorize answers that are not a principal,
// oversized chunked bodies, JSON sent as another content type, deep bodies, out-of-range cursors,
// an empty Last-Event-ID, and answers to the question of an aborted turn. Real HTTP, real Redis.
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { HarnessHost } from '../../src/index.js'
import { createHarnessHandler, toNodeListener, type HarnessHandlerOptions } from '../../src/http/index.js'
import { authorize, canAccess, chat } from '../fixtures/chat.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { auth, post, runBody } from '../helpers/http.js'
import { scanKeys } from '../rig.js'

const hosts = useInProcessHosts()

/** The keys of sessions under a prefix: the queues' own keys (BullMQ meta) and the shard count are not one's. */
const sessionKeys = async (url: string, prefix: string) =>
  (await scanKeys(url, prefix)).filter((k) => !k.includes('}:jobs:') && k !== `${prefix}:shards`)

/** The chat handler on a real server with these options; `sockets` holds every connection it accepted. */
async function listen(host: HarnessHost, options: Partial<HarnessHandlerOptions> = {}) {
  const handler = createHarnessHandler({ host, harness: chat, authorize, canAccess, ...options } as HarnessHandlerOptions)
  const server: Server = createServer(toNodeListener(handler))
  const sockets: Socket[] = []
  server.on('connection', (socket) => sockets.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
  const { port } = server.address() as AddressInfo
  return { base: `http://127.0.0.1:${port}/api/chat`, port, sockets }
}

describe('authorize: anything but a principal object is a refusal', () => {
  // each answer in an object: it.each would spread an array answer ([]) as the test's arguments
  it.each([false, 0, '', true, 'user', []].map((answer) => ({ answer, shown: JSON.stringify(answer) })))(
    'authorize returning $shown gets 401 on every route and writes nothing',
    async ({ answer }) => {
      const { host, prefix, url } = hosts.start(chat, 'probe-authorize')
      const { base } = await listen(host, { authorize: () => answer as never, canAccess: undefined })
      const responses = await Promise.all([
        post(`${base}/run`, runBody('u1-a', 'run-1', 'hi')),
        fetch(`${base}/run?threadId=u1-a`, { headers: auth }),
        fetch(`${base}/events?threadId=u1-a`, { headers: auth }),
        post(`${base}/control`, JSON.stringify({ op: 'prompt', threadId: 'u1-a', text: 'hi' })),
        fetch(`${base}/snapshot?threadId=u1-a`, { headers: auth }),
      ])
      // the statuses first: an admitted request may be an event stream that does not end
      expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 401, 401])
      for (const response of responses) expect(await response.json()).toMatchObject({ code: 'unauthorized' })
      expect(await sessionKeys(url, prefix)).toEqual([])
    },
  )
})
