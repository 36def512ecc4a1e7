import { isCluster, type RedisClient } from '../log/index.js'

/** Deletes the keys of a prefix a testing tool wrote (`<prefix>:*`); on a Cluster nothing: its keys lie on many nodes, so a test there names its own prefix. */
export async function deletePrefixKeys(client: RedisClient, prefix: string): Promise<void> {
  if (isCluster(client)) return
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500)
    if (keys.length > 0) await client.del(...keys)
    cursor = next
  } while (cursor !== '0')
}
