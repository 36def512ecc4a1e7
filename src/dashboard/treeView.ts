import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { TreeNode } from '../harness/fanoutTree.js'

type Html = HtmlEscapedString | Promise<HtmlEscapedString>

/** A child agent's session the principal may see (canAccess), decided before the page is drawn. */
export type Visible = (sessionId: string) => boolean

function node(base: string, n: TreeNode, visible: Visible): Html {
  const what =
    n.inputId !== undefined
      ? html`turn <code>${n.inputId}</code>`
      : html`<code>${n.toolCallId}</code> ${n.tool} <span class="muted">${n.status}${n.result ? ` (${n.result})` : ''}</span>`
  const agent = n.agent
  const agentLine = agent
    ? visible(agent.sessionId)
      ? html` → <a href="${base}/sessions/${encodeURIComponent(agent.sessionId)}">${agent.harness} ${agent.sessionId}</a>
          <span class="muted">${agent.outcome ?? agent.status}</span>`
      : html` → ${agent.harness} <span class="muted">(a session you may not see)</span>`
    : ''
  const below = [...(agent && visible(agent.sessionId) ? agent.children : []), ...n.children]
  return html`<li>
    ${what}${agentLine}${
      below.length
        ? html`<ul>
            ${below.map((c) => node(base, c, visible))}
          </ul>`
        : ''
    }
  </li>`
}

/** The session's fan-out trees (host.tree), each child agent's subtree only where the principal may see its session. */
export function treeSection(base: string, roots: TreeNode[], visible: Visible): Html | '' {
  if (roots.length === 0) return ''
  return html`<h2>Fan-out</h2>
    <ul class="tree">
      ${roots.map((r) => node(base, r, visible))}
    </ul>`
}

/** The child agents' sessions of these trees, at any depth: the ones canAccess is asked about. */
export function agentSessions(roots: TreeNode[]): string[] {
  return roots.flatMap((n) => [...(n.agent ? [n.agent.sessionId, ...agentSessions(n.agent.children)] : []), ...agentSessions(n.children)])
}
