/**
 * A `harness.tool.step` record's JSON from its parts, byte for byte what encodeRecord writes for it
 * (its schema's key order). `encodedValue` is the JSON text of a checked JSON copy (tool/json.ts's
 * toJsonCopy, then JSON.stringify), so the record is valid by construction: a step's value is not
 * walked again by the schema nor encoded a second time (three per 3-step call, on the hot path).
 * `compact`: the record's stored array instead (LogStream.compact).
 */
export function stepRecordJson(toolCallId: string, name: string, encodedValue: string | undefined, compact = false): string {
  if (compact) {
    // its stored array (storedRecords.ts), for a log of the deployment's record format 2
    const head = `["s",${JSON.stringify(toolCallId)},${JSON.stringify(name)}`
    return encodedValue === undefined ? `${head}]` : `${head},${encodedValue}]`
  }
  const head = `{"type":"harness.tool.step","toolCallId":${JSON.stringify(toolCallId)},"name":${JSON.stringify(name)}`
  return encodedValue === undefined ? `${head}}` : `${head},"value":${encodedValue}}`
}
