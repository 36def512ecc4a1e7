// The browser tests' set-up (test/helpers/chromium.ts): where Chromium comes from on each kind of machine.
import { describe, expect, it } from 'vitest'
import { DEBIAN_CHROMIUM, locateChromium, type ChromiumHost } from '../helpers/chromium.js'

function machine(files: string[], options: Partial<ChromiumHost> = {}) {
  const present = new Set(files)
  const installs: string[] = []
  const host: ChromiumHost = {
    env: {},
    exists: (path) => present.has(path),
    canAptInstall: false,
    aptInstall: () => {
      installs.push('chromium')
      present.add(DEBIAN_CHROMIUM)
    },
    ...options,
  }
  return { host, installs }
}

describe('the browser tests find their Chromium', () => {
  it('CHROMIUM_PATH wins when it exists', () => {
    const { host } = machine(['/opt/chrome', DEBIAN_CHROMIUM], { env: { CHROMIUM_PATH: '/opt/chrome' } })
    expect(locateChromium(host)).toEqual({ path: '/opt/chrome' })
  })

  it('a CHROMIUM_PATH that does not exist is named in the one line', () => {
    const { host } = machine([], { env: { CHROMIUM_PATH: '/nope' } })
    expect(locateChromium(host)).toEqual({ missing: expect.stringContaining('CHROMIUM_PATH=/nope does not exist') })
  })

  it("Debian's /usr/bin/chromium, with nothing installed", () => {
    const { host, installs } = machine([DEBIAN_CHROMIUM], { canAptInstall: true })
    expect(locateChromium(host)).toEqual({ path: DEBIAN_CHROMIUM })
    expect(installs).toEqual([])
  })

  it("on Debian as root without a browser, installs Debian's chromium package itself", () => {
    const { host, installs } = machine([], { canAptInstall: true })
    expect(locateChromium(host)).toEqual({ path: DEBIAN_CHROMIUM })
    expect(installs).toEqual(['chromium'])
  })

  it('elsewhere, one line that says what to install', () => {
    const { host, installs } = machine([])
    const found = locateChromium(host)
    expect(found).toEqual({
      missing: expect.stringMatching(/install it \(Debian\/Ubuntu: apt-get install -y chromium\) or set CHROMIUM_PATH/),
    })
    expect('missing' in found && found.missing.split('\n')).toHaveLength(1)
    expect(installs).toEqual([])
  })

  it('a failed apt-get says so in the same one line', () => {
    const { host } = machine([], {
      canAptInstall: true,
      aptInstall: () => {
        throw new Error('E: Unable to locate package chromium\nmore')
      },
    })
    expect(locateChromium(host)).toEqual({
      missing: expect.stringMatching(/^apt-get install -y chromium failed \(E: Unable to locate package chromium\)\. /),
    })
  })
})
