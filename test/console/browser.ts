import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it), or PRP_CHROMIUM. */
export const CHROMIUM = process.env.PRP_CHROMIUM ?? "/usr/bin/chromium";

/** The flags of a browser that must not reach the network or keep state between tests. */
const FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export interface Browser {
  context: BrowserContext;
  /** Closes the browser (and its processes) and removes its profile. */
  close(): Promise<void>;
}

/**
 * Chromium, headless, on a fresh profile. Playwright's own browser download cannot work on
 * these machines, so without a Chromium at CHROMIUM the test fails, saying how to get one:
 * a skipped browser test would pass for a console nobody has seen work.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the console's browser tests need Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (as .ci/run does), or set PRP_CHROMIUM to a Chromium binary`);
  }
  const profile = mkdtempSync(join(tmpdir(), "prp-chromium-"));
  // A persistent context is how Playwright takes a --user-data-dir of our choosing: a fresh one.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1280, height: 900 } });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
