export { retentionOf, type RetentionOptions } from './options.js'
export { retainOnce } from './pass.js'
