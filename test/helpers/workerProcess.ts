// Worker processes for integration tests: the shop fixture harness unless a test names another module.
import { spawnWorker as spawn, type SpawnWorkerOptions, type WorkerProcess } from '../../src/testing/workerProcess.js'

export type { WorkerProcess }

export function spawnWorker(options: Omit<SpawnWorkerOptions, 'module'> & { module?: string }): Promise<WorkerProcess> {
  return spawn({ module: 'test/fixtures/shop.ts', ...options })
}
