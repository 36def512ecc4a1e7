#!/usr/bin/env node
// The `harness` CLI: the compiled CLI in dist/ (`npm run build`; `npm pack` builds it). A TypeScript
// harness module is loaded through the tsx of the user's project (src/cli/loadHarnesses.ts).
await import('../dist/cli/main.js')
