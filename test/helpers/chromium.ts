// The browser tests' Chromium: CHROMIUM_PATH, else Debian's /usr/bin/chromium, else (Debian, as root)
// Debian's `chromium` package installed by the test run itself (test/setup/chromium.ts, a globalSetup);
// anywhere else one line that says what to install. Never a browser download: playwright-core drives it.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'

export const DEBIAN_CHROMIUM = '/usr/bin/chromium'
/** Set by the globalSetup when no Chromium could be found or installed: the line the browser tests fail with. */
const MISSING = 'DH_CHROMIUM_MISSING'

export interface ChromiumHost {
  env: Record<string, string | undefined>
  exists(path: string): boolean
  /** Debian (or a derivative with apt-get and Debian's chromium package), run as root. */
  canAptInstall: boolean
  /** Installs Debian's chromium package; throws when apt-get fails. */
  aptInstall(): void
}

/** Where Chromium is, or the one line that says what to install. */
export function locateChromium(host: ChromiumHost): { path: string } | { missing: string } {
  const fromEnv = host.env.CHROMIUM_PATH
  if (fromEnv)
    return host.exists(fromEnv)
      ? { path: fromEnv }
      : { missing: `CHROMIUM_PATH=${fromEnv} does not exist: point it at a Chromium or Chrome binary.` }
  if (host.exists(DEBIAN_CHROMIUM)) return { path: DEBIAN_CHROMIUM }
  const what = `The browser tests need Chromium: install it (Debian/Ubuntu: apt-get install -y chromium) or set CHROMIUM_PATH to a Chromium or Chrome binary.`
  if (!host.canAptInstall) return { missing: what }
  try {
    host.aptInstall()
  } catch (error) {
    return { missing: `apt-get install -y chromium failed (${(error as Error).message.split('\n')[0]}). ${what}` }
  }
  return host.exists(DEBIAN_CHROMIUM) ? { path: DEBIAN_CHROMIUM } : { missing: what }
}

/** This machine, as locateChromium sees it. */
function thisMachine(): ChromiumHost {
  const apt = (...args: string[]) =>
    execFileSync('apt-get', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  return {
    env: process.env,
    exists: existsSync,
    canAptInstall: existsSync('/etc/debian_version') && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get'),
    aptInstall: () => {
      apt('update')
      apt('install', '-y', 'chromium')
    },
  }
}

/** For the globalSetup: finds (or installs) Chromium once a run and tells the test files by env. */
export function prepareChromium(host = thisMachine()): void {
  const found = locateChromium(host)
  if ('path' in found) process.env.CHROMIUM_PATH = found.path
  else process.env[MISSING] = found.missing
}

/** For a browser test: the Chromium to launch; throws the one line that says what to install. */
export function chromiumPath(): string {
  const missing = process.env[MISSING]
  if (missing) throw new Error(missing)
  const found = locateChromium({ ...thisMachine(), canAptInstall: false })
  if ('missing' in found) throw new Error(found.missing)
  return found.path
}
