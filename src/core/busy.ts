/**
 * What a prompt to a busy session does (defineHarness `busy`): wait in the session's line, join the
 * running turn (steer), or be refused.
 */
export type BusyMode = 'queue' | 'steer' | 'reject'
