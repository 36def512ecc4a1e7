export { scriptedModel, type ScriptEntry, type ScriptedResponse, type ScriptedToolCall } from './scriptedModel.js'
export { startRedisServer, hasRedisServerBinary, isRedisReachable, type RedisServerHandle, type RedisServerOptions } from './redisServer.js'
export { spawnWorker, type SpawnWorkerOptions, type WorkerProcess } from './workerProcess.js'
export { startRedisCluster, type RedisClusterHandle, type ClusterNodeHandle } from './redisCluster.js'
export {
  exploreCrashes,
  type ExploreCrashesOptions,
  type CrashReport,
  type CrashPoint,
  type CrashFinding,
  type SideEffect,
} from './exploreCrashes.js'
export { replaySession, type DeployReport, type DeployProblem, type DeployProblemCode, type StorageOptions } from '../deploys/index.js'
export { createTestHost, type TestHost, type TestHostOptions, type TestCall, type TestStep, type TestWorker } from './testHost.js'
