// A test provider for the flow-control tests: an HTTP server that answers each request after `delayMs`
// and records how many requests were open at once and when each began (R17).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

interface ProviderStart {
  at: number
  tenant: string
  n: number
}

export interface TestProvider {
  url: string
  /** The most requests open at once so far. */
  readonly maxInFlight: number
  readonly inFlight: number
  starts: ProviderStart[]
  /** When each request's response ended, by n (a request cut by a killed client ends when its socket closes). */
  ends: Array<{ at: number; tenant: string; n: number }>
  reset(): void
  close(): Promise<void>
}

export async function startProvider(delayMs = 40): Promise<TestProvider> {
  let inFlight = 0
  let maxInFlight = 0
  const provider = {
    starts: [] as ProviderStart[],
    ends: [] as TestProvider['ends'],
  }
  const server: Server = createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams
    const tenant = query.get('tenant') ?? ''
    const n = Number(query.get('n'))
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    provider.starts.push({ at: Date.now(), tenant, n })
    let open = true
    const end = () => {
      if (!open) return
      open = false
      inFlight--
      provider.ends.push({ at: Date.now(), tenant, n })
    }
    res.on('close', end)
    setTimeout(() => res.end(`ok ${n}`), delayMs)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    ...provider,
    url: `http://127.0.0.1:${port}`,
    get maxInFlight() {
      return maxInFlight
    },
    get inFlight() {
      return inFlight
    },
    reset() {
      provider.starts.length = 0
      provider.ends.length = 0
      maxInFlight = inFlight
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
