import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Redis } from 'ioredis'

/**
 * Loads every `<name>-<numberOfKeys>.lua` file of this folder once, resolves `--@include <file>`
 * lines from `includes/`, and defines each as an ioredis command (EVALSHA with EVAL fallback).
 */
const here = dirname(fileURLToPath(import.meta.url))

function loadScripts(): Array<{ name: string; numberOfKeys: number; lua: string }> {
  return readdirSync(here)
    .filter((f) => f.endsWith('.lua'))
    .map((file) => {
      const match = /^(\w+)-(\d+)\.lua$/.exec(file)
      if (!match) throw new Error(`Lua script file name must be <name>-<keys>.lua: ${file}`)
      const lua = readFileSync(join(here, file), 'utf8').replace(/^--@include (\w+)$/gm, (_, inc: string) =>
        readFileSync(join(here, 'includes', `${inc}.lua`), 'utf8'),
      )
      return { name: match[1]!, numberOfKeys: Number(match[2]), lua }
    })
}

const scripts = loadScripts()

type Reply = Array<string | number>
export interface LogCommands {
  appendRecords(log: string, ...records: string[]): Promise<string[]>
  addInput(log: string, inputs: string, sessions: string, openTurns: string, ...argv: Array<string | number>): Promise<Reply>
  settleInput(log: string, inputs: string, openTurns: string, ...argv: string[]): Promise<Reply>
  beginCall(calls: string, log: string, staged: string, openCalls: string, ...argv: Array<string | number>): Promise<Reply>
  saveStep(calls: string, steps: string, log: string, ...argv: Array<string | number>): Promise<Reply>
  stageRecords(calls: string, staged: string, ...argv: Array<string | number>): Promise<Reply>
  askQuestion(calls: string, steps: string, log: string, questions: string, openQuestions: string, ...argv: Array<string | number>): Promise<Reply>
  answerQuestion(questions: string, log: string, openQuestions: string, ...argv: Array<string | number>): Promise<Reply>
  logModelResponse(log: string, inputs: string, calls: string, ...argv: Array<string | number>): Promise<Reply>
  requestCall(calls: string, log: string, ...argv: string[]): Promise<Reply>
  parkCall(calls: string, log: string, ...argv: Array<string | number>): Promise<Reply>
  landResult(calls: string, log: string, staged: string, openCalls: string, ...argv: Array<string | number>): Promise<Reply>
}

const defined = new WeakSet<Redis>()

/** Returns the client with our commands defined on it (idempotent per client). */
export function withLogCommands(redis: Redis): Redis & LogCommands {
  if (!defined.has(redis)) {
    for (const { name, numberOfKeys, lua } of scripts) redis.defineCommand(name, { numberOfKeys, lua })
    defined.add(redis)
  }
  return redis as Redis & LogCommands
}
