// The model of `npm run chaos -- --provider-faults`: an OpenAI-compatible `POST /v1/chat/completions`
// (streaming, as test/helpers/openaiServer.ts answers) on the billing server, so model calls cross
// real HTTP and can fail there. It answers what scriptedModel does in the plain run: a user message
// `chaos:<JSON array of calls>` gets those calls (ids `t<model call>-<j>`), then a text.
import type http from 'node:http'
import { fail, pickFault, type FaultKind } from './faults.js'

interface WireMessage {
  role: string
  content: unknown
  tool_calls?: unknown[]
}
interface ChatRequest {
  model: string
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  messages: WireMessage[]
}

const PROMPT_PREFIX = 'chaos:'
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('')
      : ''

/** The chunks of the answer to `request`, as the Chat Completions API streams them. */
function answer(request: ChatRequest, id: string): object[] {
  const { messages } = request
  const modelCall = messages.filter((m) => m.role === 'assistant').length
  const lastUser = messages.map((m) => m.role).lastIndexOf('user')
  const since = messages.slice(lastUser + 1)
  const text = textOf(messages[lastUser]?.content)
  const chunk = (delta: object, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })
  const chunks: object[] = []
  if (!since.some((m) => m.role === 'assistant') && text.startsWith(PROMPT_PREFIX)) {
    const calls = JSON.parse(text.slice(PROMPT_PREFIX.length)) as Array<{ name: string; input: unknown }>
    chunks.push(chunk({ role: 'assistant', content: null }))
    for (const [index, c] of calls.entries()) {
      const args = JSON.stringify(c.input)
      const half = Math.ceil(args.length / 2)
      chunks.push(
        chunk({ tool_calls: [{ index, id: `t${modelCall}-${index}`, type: 'function', function: { name: c.name, arguments: '' } }] }),
      )
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }))
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }))
    }
    chunks.push(chunk({}, 'tool_calls'))
  } else {
    chunks.push(chunk({ role: 'assistant', content: '' }))
    chunks.push(chunk({ content: `done: ${since.filter((m) => m.role === 'tool').length} results` }))
    chunks.push(chunk({}, 'stop'))
  }
  if (request.stream_options?.include_usage)
    chunks.push({
      id,
      object: 'chat.completion.chunk',
      created: 0,
      model: request.model,
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    })
  return chunks
}

let served = 0

/** Answers a model request (its body already read), or fails it at random. */
export function modelRoute(body: string, res: http.ServerResponse, faults: Record<FaultKind, number>): void {
  let request: ChatRequest
  try {
    request = JSON.parse(body) as ChatRequest
  } catch {
    res.writeHead(400, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { message: 'body must be JSON', type: 'invalid_request_error' } }))
    return
  }
  const sse = answer(request, `chatcmpl-${++served}`)
    .map((c) => `data: ${JSON.stringify(c)}\n\n`)
    .join('')
  const fault = pickFault(faults)
  if (fault) return fail(res, fault, sse, 'text/event-stream')
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  res.end(`${sse}data: [DONE]\n\n`)
}
