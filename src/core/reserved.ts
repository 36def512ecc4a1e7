/**
 * The prefix of the harness's own record types and step names: a tool's `append` record types and
 * its step names never start with it (R9), so nothing a tool writes can pass for the harness's.
 */
export const RESERVED_PREFIX = 'harness.'
