import * as callScripts from './callScripts.js'
import * as flowScripts from './flowScripts.js'
import * as turnScripts from './turnScripts.js'

export type { ToolEnd } from './callScripts.js'
export { runScript, type AnyScript, type ReplicaWait, type ScriptInput, type ScriptReply } from './script.js'

/** Every Lua script of this folder, by name: its declaration (script.ts defineScript) and source. */
export const scripts = { ...callScripts, ...turnScripts, ...flowScripts }

/** sha1 -> script name of every script, as EVALSHA names it (for the bench's command profile). */
export function scriptShas(): Map<string, string> {
  return new Map(Object.values(scripts).map(({ name, sha }) => [sha, name]))
}
