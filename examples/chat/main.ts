// The example page: TanStack AI's own ChatClient, pointed at the harness handler with
// fetchServerSentEvents. Every message part is rendered as text (textContent: nothing from the
// model or a tool becomes HTML).
import { ChatClient, fetchServerSentEvents } from '@tanstack/ai-client'

const messagesEl = document.querySelector<HTMLDivElement>('#messages')!
const form = document.querySelector<HTMLFormElement>('#form')!
const input = document.querySelector<HTMLInputElement>('#prompt')!
const send = document.querySelector<HTMLButtonElement>('#send')!
const status = document.querySelector<HTMLDivElement>('#status')!

type Part = {
  type: string
  content?: string
  text?: string
  name?: string
  arguments?: string
  output?: unknown
  state?: string
  approval?: { id: string }
}
type Message = { id: string; role: string; parts: Part[] }

// A `needsApproval` call: the run ends with TanStack's approval interrupt and the call's part waits as
// 'approval-requested'; the decision goes back with ChatClient's addToolApprovalResponse (a resume of
// the run through the handler), which wakes the durably parked call on whichever worker picks it up.
function approvalCard(part: Part, approvalId: string): HTMLElement {
  const card = document.createElement('div')
  card.className = 'approval'
  const text = document.createElement('p')
  text.textContent = `Approval needed: ${part.name ?? ''} ${part.arguments ?? ''}`
  const decide = (approved: boolean) => () => void client.addToolApprovalResponse({ id: approvalId, approved })
  const approve = document.createElement('button')
  approve.textContent = 'Approve'
  approve.className = 'approve'
  approve.onclick = decide(true)
  const deny = document.createElement('button')
  deny.textContent = 'Deny'
  deny.className = 'deny'
  deny.onclick = decide(false)
  card.append(text, approve, deny)
  return card
}

function render(messages: Message[]): void {
  messagesEl.replaceChildren(
    ...messages.flatMap((message) =>
      message.parts.map((part) => {
        const el = document.createElement('div')
        if (part.type === 'text') {
          el.className = `msg ${message.role === 'user' ? 'user' : 'assistant'}`
          el.textContent = part.content ?? part.text ?? ''
        } else if (part.type === 'tool-call' && part.state === 'approval-requested' && part.approval) {
          return approvalCard(part, part.approval.id)
        } else if (part.type === 'tool-call') {
          el.className = 'msg tool'
          el.textContent = `tool ${part.name ?? ''} ${part.state ?? ''}`
        } else if (part.type === 'tool-result') {
          el.className = 'msg tool'
          el.textContent = `result ${typeof part.content === 'string' ? part.content : JSON.stringify(part.output ?? '')}`
        } else return el
        el.dataset.role = message.role
        return el
      }),
    ),
  )
}

// one thread per page load; the handler maps it to a durable session
const threadId = `web-${crypto.randomUUID()}`
const client = new ChatClient({
  connection: fetchServerSentEvents('/api/run'),
  threadId,
  onMessagesChange: (messages: unknown) => render(messages as Message[]),
  onLoadingChange: (loading: boolean) => {
    send.disabled = loading
    status.textContent = loading ? 'The agent is working…' : ''
  },
  onError: (error: Error) => {
    status.textContent = `Error: ${error.message}`
  },
} as never)

form.addEventListener('submit', (event) => {
  event.preventDefault()
  const text = input.value.trim()
  if (!text) return
  input.value = ''
  void client.sendMessage(text)
})
