// globalSetup of every vitest run: Chromium for the browser tests, once a run (test/helpers/chromium.ts).
import { prepareChromium } from '../helpers/chromium.js'

export function setup(): void {
  prepareChromium()
}
