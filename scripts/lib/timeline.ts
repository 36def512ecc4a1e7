import type { LogEntry } from '../../src/entries/ops.js'

const short = (v: unknown) => {
  const s = JSON.stringify(v)
  return s && s.length > 90 ? `${s.slice(0, 87)}...` : s
}

/** One readable line per log entry: time since the first entry, the record type, what matters in it. */
export function formatTimeline(entries: LogEntry[]): string[] {
  const t0 = Number(entries[0]?.id.split('-')[0] ?? 0)
  return entries.map(({ id, record }) => {
    const r = record as Record<string, unknown>
    const at = `+${String(Number(id.split('-')[0]) - t0).padStart(5)} ms`
    const what = (() => {
      switch (record.type) {
        case 'harness.input':
          return `user: ${short(r.text)}`
        case 'harness.model.response':
          return (r.toolCalls as unknown[]).length ? `model calls ${short(r.toolCalls)}` : `model: ${short(r.text)}`
        case 'harness.tool.started':
          return `${r.name} ${r.toolCallId} attempt ${r.attempt} (${r.reason}, replay ${r.replay})`
        case 'harness.tool.step':
          return `${r.toolCallId} step ${r.name}${'value' in r ? ` = ${short(r.value)}` : ' done'}`
        case 'harness.tool.result':
          return `${r.name} ${r.toolCallId} ${r.error ? `ERROR ${short(r.error)}` : `result ${short(r.result)}`}`
        case 'harness.input.settled':
          return `turn ${r.outcome}${r.text ? `: ${short(r.text)}` : ''}`
        default:
          return short(Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'type')))
      }
    })()
    return `${at}  ${record.type.padEnd(24)} ${what}`
  })
}
