// The example page: TanStack AI's own ChatClient, pointed at the harness handler with
// fetchServerSentEvents. Every message part is rendered as text (textContent: nothing from the
// model or a tool becomes HTML).
import { ChatClient, fetchServerSentEvents } from '@tanstack/ai-client'

const messagesEl = document.querySelector<HTMLDivElement>('#messages')!
const form = document.querySelector<HTMLFormElement>('#form')!
const input = document.querySelector<HTMLInputElement>('#prompt')!
const send = document.querySelector<HTMLButtonElement>('#send')!
const status = document.querySelector<HTMLDivElement>('#status')!

type Part = { type: string; content?: string; text?: string; name?: string; output?: unknown; state?: string }
type Message = { id: string; role: string; parts: Part[] }

function render(messages: Message[]): void {
  messagesEl.replaceChildren(
    ...messages.flatMap((message) =>
      message.parts.map((part) => {
        const el = document.createElement('div')
        if (part.type === 'text') {
          el.className = `msg ${message.role === 'user' ? 'user' : 'assistant'}`
          el.textContent = part.content ?? part.text ?? ''
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

// Approvals: a `needsApproval` call waits as a question of kind 'approval'; while a turn runs, the page
// reads the thread's open questions and shows each approval with its buttons (POST control answers it)
const approvalsEl = document.querySelector<HTMLDivElement>('#approvals')!
type Question = { questionId: string; kind?: string; message: string }
const shown = new Set<string>()

async function pollApprovals(): Promise<void> {
  const response = await fetch(`/api/run?threadId=${encodeURIComponent(threadId)}`)
  if (!response.ok) return
  const { questions } = (await response.json()) as { questions: Question[] }
  for (const question of questions.filter((q) => q.kind === 'approval' && !shown.has(q.questionId))) {
    shown.add(question.questionId)
    const card = document.createElement('div')
    card.className = 'approval'
    const text = document.createElement('p')
    text.textContent = `Approval needed: ${question.message}`
    const decide = (approved: boolean) => async () => {
      card.remove()
      await fetch('/api/control', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ op: 'answer', threadId, questionId: question.questionId, value: { approved } }),
      })
    }
    const approve = document.createElement('button')
    approve.textContent = 'Approve'
    approve.className = 'approve'
    approve.onclick = decide(true)
    const deny = document.createElement('button')
    deny.textContent = 'Deny'
    deny.className = 'deny'
    deny.onclick = decide(false)
    card.append(text, approve, deny)
    approvalsEl.append(card)
  }
}
setInterval(() => {
  if (send.disabled) void pollApprovals().catch(() => {})
}, 400)

form.addEventListener('submit', (event) => {
  event.preventDefault()
  const text = input.value.trim()
  if (!text) return
  input.value = ''
  void client.sendMessage(text)
})
