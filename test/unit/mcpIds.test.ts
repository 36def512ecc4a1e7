// The MCP server's ids (src/mcp/taskIds.ts): a principal's session is one to one with (harness,
// principal id) and always a valid session id; task ids and elicitation ids from a client are used
// only when they have our shape.
import { describe, expect, it } from 'vitest'
import { assertSessionId } from '../../src/log/index.js'
import {
  callIdOfTask,
  createdAtOf,
  elicitationId,
  keyedTaskId,
  mcpSessionId,
  newTaskId,
  parseElicitationId,
  taskIdOfCall,
} from '../../src/mcp/taskIds.js'

describe('MCP ids', () => {
  it('R27 a session id a (harness, principal): valid, and never shared by two pairs, whatever the names hold', () => {
    const harnesses = ['shop', 'pkg/adder', 'pkg_sadder', 'a.b', 'a_db', '_', '__', '.', 'x'.repeat(100), '/'.repeat(100)]
    const ids = ['alice', 'a.b', 'a/b', 'Ωμέγα', '', ' ', 'x'.repeat(150), 'x'.repeat(151), 'y'.repeat(5000), 'mcp.shop.palice']
    const seen = new Map<string, string>()
    for (const h of harnesses)
      for (const id of ids) {
        const sessionId = mcpSessionId(h, { id })
        if (id === '') {
          expect(sessionId).toBeUndefined()
          continue
        }
        assertSessionId(sessionId)
        const pair = JSON.stringify([h, id])
        expect(seen.get(sessionId!) ?? pair).toBe(pair)
        seen.set(sessionId!, pair)
      }
    expect(mcpSessionId('shop', { sub: 'alice' })).toBe(mcpSessionId('shop', { id: 'alice' }))
    expect(mcpSessionId('shop', { id: 7 })).toBe(mcpSessionId('shop', { id: '7' }))
    expect(mcpSessionId('shop', {})).toBeUndefined()
  })

  it('R27 a task id names its call and its creation time; another shape names nothing', () => {
    const taskId = newTaskId(1_700_000_000_000)
    expect(createdAtOf(taskId)).toBe(1_700_000_000_000)
    expect(taskIdOfCall(callIdOfTask(taskId)!)).toBe(taskId)
    for (const bad of ['', 'x', '../x', `${taskId}.`, `${taskId}x`, 'lol-aaaaaaaaaaaaaaa*', 42, null, { taskId }])
      expect(callIdOfTask(bad)).toBeUndefined()
    expect(taskIdOfCall('run-123')).toBeUndefined()
    // a caller's idempotency key names one task, whatever the key holds; two keys two tasks
    const keyed = keyedTaskId('order-42:call_1:mcp:charge')
    expect(keyed).toBe(keyedTaskId('order-42:call_1:mcp:charge'))
    expect(keyed).not.toBe(keyedTaskId('order-42:call_2:mcp:charge'))
    expect(taskIdOfCall(callIdOfTask(keyed)!)).toBe(keyed)
    expect(createdAtOf(keyed)).toBeUndefined()
    expect(callIdOfTask(keyedTaskId('../../etc\u0000'))).toMatch(/^mcp-k[A-Za-z0-9_-]{22}$/)
  })

  it('R27 an elicitation id reads back as its task and question, and nothing else does', () => {
    const taskId = newTaskId()
    expect(parseElicitationId(elicitationId(taskId, 'q.1-x'))).toEqual({ taskId, questionId: 'q.1-x' })
    for (const bad of [
      'dh-ask:',
      `dh-ask:${taskId}`,
      `dh-ask:${taskId}:`,
      `dh-ask:nope:q1`,
      `dh-ask:${taskId}:q 1`,
      7,
      null,
      `x${elicitationId(taskId, 'q')}`,
    ])
      expect(parseElicitationId(bad)).toBeUndefined()
  })
})
