/** A batch of model text goes out at this size or after this long, whichever is first. */
const MAX_BATCH_BYTES = 256
const MAX_BATCH_MS = 100

/**
 * Batches the model's text deltas for the live stream: followers see text while the model writes it,
 * at most every ~100 ms or 256 bytes, not one Redis write per token. Writes go out at once, in order
 * on the one connection (not waiting for each other), best effort (a failed one is dropped: the logged
 * response carries the whole text); `close` flushes and waits for them all.
 */
export function textDeltas(send: (at: number, text: string) => Promise<void>): { push(delta: string): void; close(): Promise<void> } {
  let pending = ''
  let sent = 0
  let timer: NodeJS.Timeout | undefined
  const writes: Array<Promise<void>> = []
  const flush = () => {
    clearTimeout(timer)
    timer = undefined
    if (!pending) return
    const [at, text] = [sent, pending]
    sent += text.length
    pending = ''
    writes.push(send(at, text).catch(() => {}))
  }
  return {
    push(delta) {
      pending += delta
      if (Buffer.byteLength(pending) >= MAX_BATCH_BYTES) flush()
      else timer ??= setTimeout(flush, MAX_BATCH_MS)
    },
    async close() {
      flush()
      await Promise.all(writes)
    },
  }
}
