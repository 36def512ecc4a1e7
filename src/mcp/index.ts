/**
 * durable-harness/mcp: a harness's durable tools served over MCP (tools/call and MCP Tasks, answered
 * by any server process), and an MCP server's tools as durable tools (docs/mcp.md).
 */
export { createMcpServer } from './server.js'
export type { McpServerOptions } from './server.js'
export { mcpTools, IDEMPOTENCY_KEY_META, McpToolError } from './mcpTools.js'
export type { McpToolsOptions, McpDurableTool } from './mcpTools.js'
