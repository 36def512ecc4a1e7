// A small OpenAI-compatible model server for tests: POST /v1/chat/completions with `stream: true`,
// answered as the Chat Completions API streams (SSE `chat.completion.chunk`s, then `data: [DONE]`):
// text in several content deltas, parallel tool calls as index-keyed `tool_calls` deltas whose
// `function.arguments` arrive in pieces, a chunk with `finish_reason`, and (with
// `stream_options.include_usage`) a last chunk with no choices and the `usage`.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A message of the request as the OpenAI SDK sends it. */
interface WireMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string | null
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>
  tool_call_id?: string
}

export interface ChatRequest {
  model: string
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  messages: WireMessage[]
  tools?: Array<{ type: 'function'; function: { name: string; parameters: Record<string, unknown>; strict?: boolean } }>
}

export interface ModelReply {
  /** The text, as the content deltas it is sent in. */
  text?: string[]
  /** Parallel tool calls: each its id, name and the pieces its arguments JSON is sent in. */
  toolCalls?: Array<{ id: string; name: string; arguments: string[] }>
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
  /** Send the text, then nothing more until the client goes away (a provider that stalls mid-stream). */
  stall?: boolean
}

/** An HTTP error reply instead of a stream (a provider outage, a refused key): status, headers, the JSON error body. */
export interface FaultReply {
  status: number
  headers?: Record<string, string>
  body: { error: { message: string; type: string; code?: string | null } }
}

export interface ModelServerOptions {
  /** Decides, before each answer, whether the request fails instead (undefined: answer it). */
  fault?: (request: ChatRequest) => FaultReply | undefined
  /** Waits this long after the headers before the answer's chunks (a slow provider: a kill then cuts the request). */
  delayMs?: number
}

export interface ModelServer {
  /** The base URL to give the OpenAI SDK (`.../v1`). */
  baseURL: string
  /** Every request body received, in order. */
  requests: ChatRequest[]
  /** Requests the client closed before their answer ended, in order. */
  cut: ChatRequest[]
  /** Resolves once `count` requests have been cut. */
  cuts(count: number): Promise<void>
  close(): Promise<void>
}

/** Starts the server on 127.0.0.1 (a free port); `answer` decides each reply from the request. */
export async function startModelServer(
  answer: (request: ChatRequest) => ModelReply,
  options: ModelServerOptions = {},
): Promise<ModelServer> {
  const requests: ChatRequest[] = []
  const cut: ChatRequest[] = []
  const cutWaiters = new Set<() => void>()
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: String(error), type: 'server_error' } }))
    })
  })
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error' } }))
      return
    }
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const request = JSON.parse(Buffer.concat(chunks).toString()) as ChatRequest
    requests.push(request)
    if (request.stream !== true) throw new Error('this server answers streaming requests only')
    const fault = options.fault?.(request)
    if (fault) {
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers })
      res.end(JSON.stringify(fault.body))
      return
    }
    const reply = answer(request)
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    res.on('close', () => {
      if (res.writableFinished) return
      cut.push(request)
      for (const wake of cutWaiters) wake()
    })
    if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs))
    if (res.destroyed) return
    const sse = replyChunks(request, reply, `chatcmpl-${requests.length}`)
    // a stalled reply sends its role and text chunks, then waits for the client to close
    for (const chunk of reply.stall ? sse.slice(0, 1 + (reply.text?.length ?? 0)) : sse) res.write(`data: ${JSON.stringify(chunk)}\n\n`)
    if (!reply.stall) res.end('data: [DONE]\n\n')
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    cut,
    cuts: (count) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (cut.length < count) return
          cutWaiters.delete(check)
          resolve()
        }
        cutWaiters.add(check)
        check()
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections() // the SDK keeps connections alive
      }),
  }
}

/** The chunks of one reply, as OpenAI sends them: role first, then content, then each call's header and argument pieces. */
function replyChunks(request: ChatRequest, reply: ModelReply, id: string): object[] {
  const includeUsage = request.stream_options?.include_usage === true
  const created = 1_700_000_000
  const chunk = (delta: object, finishReason: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: request.model,
    system_fingerprint: 'fp_test',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  })
  const calls = reply.toolCalls ?? []
  const chunks: object[] = [chunk({ role: 'assistant', content: calls.length && !reply.text ? null : '', refusal: null })]
  for (const piece of reply.text ?? []) chunks.push(chunk({ content: piece }))
  for (const [index, call] of calls.entries()) {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }))
    for (const piece of call.arguments) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
  }
  chunks.push(chunk({}, calls.length ? 'tool_calls' : 'stop'))
  if (includeUsage)
    chunks.push({
      id,
      object: 'chat.completion.chunk',
      created,
      model: request.model,
      system_fingerprint: 'fp_test',
      choices: [],
      usage: reply.usage,
    })
  return chunks
}
