// The HTTP handler on a real node:http server, for the integration tests that drive it with fetch or
// the real @tanstack/ai-client ChatClient.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ChatClient } from '@tanstack/ai-client'
import { expect } from 'vitest'
import type { HarnessHost } from '../../src/index.js'
import { createHarnessHandler, toNodeListener } from '../../src/http/index.js'
import { authorize, canAccess, chat, TOKEN } from '../fixtures/chat.js'
import type { useInProcessHosts } from './hosts.js'

export const auth = { authorization: TOKEN }

export interface Sse {
  id?: string
  data: any
}

/** `serve(label)`: a host with workers and the handler on a real HTTP server; `base` is where it is mounted. */
export function httpServers(hosts: ReturnType<typeof useInProcessHosts>) {
  async function listen(host: HarnessHost): Promise<string> {
    const server = createServer(toNodeListener(createHarnessHandler({ host, harness: chat, authorize, canAccess })))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`
  }
  async function serve(label: string) {
    const { host, prefix, url } = hosts.start(chat, label)
    const base = await listen(host)
    return { host, prefix, url, base }
  }
  return { serve, listen }
}

/** Reads SSE events until the stream ends or `until` says stop (then disconnects). */
export async function readSse(response: Response, until: (e: Sse) => boolean = () => false): Promise<Sse[]> {
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  const events: Sse[] = []
  let buffer = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return events
    buffer += value
    let end: number
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const lines = block.split('\n').filter((l) => !l.startsWith(':'))
      if (lines.length === 0) continue
      const id = lines.find((l) => l.startsWith('id: '))?.slice(4)
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6))
      events.push({ ...(id !== undefined ? { id } : {}), data })
      if (until(events[events.length - 1]!)) {
        await reader.cancel()
        return events
      }
    }
  }
}

export const runBody = (threadId: string, runId: string, content: string) =>
  JSON.stringify({
    threadId,
    runId,
    state: {},
    messages: [{ id: `m-${runId}`, role: 'user', content }],
    tools: [],
    context: [],
    forwardedProps: {},
  })

export const post = (url: string, body: string, headers: Record<string, string> = auth) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

/** The assistant's text in a ChatClient's messages. */
export const textOf = (client: ChatClient) =>
  client
    .getMessages()
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.content] : [])))
    .join('')
