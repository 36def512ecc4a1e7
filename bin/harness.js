#!/usr/bin/env node
// The `harness` CLI: runs src/cli/main.ts through tsx (a dependency), so it works from a clone after `npm ci`.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli/main.ts')
