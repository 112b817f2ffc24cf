import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

/** axe-core's browser build, read once from the installed package. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** A rule the page breaks, as a person fixes it: which rule, where, and what it asks for. */
export interface AxeViolation {
  rule: string;
  impact: string;
  help: string;
  targets: string[];
}

/** The impacts that fail a page: a serious or critical barrier for someone using it. */
const FAILING = new Set(["serious", "critical"]);

/**
 * Runs axe-core over the page as it is shown and returns its serious and critical violations.
 * The source is evaluated through the DevTools protocol, which the console's Content-Security-Policy
 * (script-src 'self') does not govern, rather than added as an inline <script> it would block.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate("typeof window.axe === 'object'"))) await page.evaluate(`${AXE_SOURCE}\n;undefined`);
  // A string, not a function: it runs in the page, where `document` is (this code's types have no DOM).
  const violations = await page.evaluate<AxeViolation[]>(`(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      rule: v.id,
      impact: v.impact ?? "unknown",
      help: v.help,
      targets: v.nodes.map((n) => n.target.map(String).join(" ")),
    }));
  })()`);
  return violations.filter((v) => FAILING.has(v.impact));
}

/** One line a violation: "rule (impact): help — at target, target". */
export const describeViolations = (where: string, violations: AxeViolation[]): string[] =>
  violations.map((v) => `${where}: ${v.rule} (${v.impact}): ${v.help} — at ${v.targets.slice(0, 5).join(", ")}`);
