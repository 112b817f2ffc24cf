import { join } from "node:path";
import type { Page } from "playwright-core";
import { packageRoot } from "../../src/contract/package-root.js";

/** Whether the browser tests write the documentation's screenshots (`npm run screenshots` sets it). */
export const SCREENSHOTS = process.env.PRP_CONSOLE_SCREENSHOTS === "1";

/**
 * Writes docs/console-NAME.png from the page as it is now, only under PRP_CONSOLE_SCREENSHOTS=1:
 * the images in docs/ are the pages the tests saw, regenerated rather than drawn by hand.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  await page.screenshot({
    path: join(packageRoot(), "docs", `console-${name}.png`),
    fullPage: true,
    animations: "disabled",
    caret: "hide",
  });
}
