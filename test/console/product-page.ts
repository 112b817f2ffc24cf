import { join } from "node:path";
import type { Locator, Page } from "playwright-core";
import { packageRoot } from "../../src/contract/package-root.js";
import { testAgentCommand } from "../harness/acp/drive-agent.js";
import { until } from "../support/until.js";
import type { ProductStack } from "./product-stack.js";

/** Bounded waits in the page: generous, because two cores are shared with other suites. */
export const WAIT_MS = 60_000;
/** How long a page that should already be there may take to appear: a missing page fails fast. */
const PAGE_MS = 20_000;

/**
 * The ACP test agent playing one of this folder's e2e-agents scenarios (or a built-in one by
 * name). The files are in the source tree, which a worker's sandboxed agent sees (not /tmp).
 */
export const agentCommand = (scenario: string): string =>
  testAgentCommand(
    scenario.endsWith(".json") ? join(packageRoot(), "test", "console", "e2e-agents", scenario) : scenario,
  );

/** `[data-testid=ID]` of the plan's test ids. */
export const byTestId = (scope: Page | Locator, id: string): Locator => scope.locator(`[data-testid="${id}"]`);

/**
 * Waits for `locator` to be shown; past the deadline the failure says what was expected and,
 * from `context`, what the store says meanwhile, so that a failure reads without a trace viewer.
 */
export async function shown(
  locator: Locator,
  what: string,
  context?: () => string | Promise<string>,
  timeout = WAIT_MS,
): Promise<void> {
  try {
    await locator.first().waitFor({ timeout });
  } catch (err) {
    const said = context ? `; meanwhile ${await context()}` : "";
    throw new Error(`the page did not show ${what} within ${timeout} ms${said}`, { cause: err });
  }
}

/** What the new-run form is given: the plan's fields (`#/new`). */
export interface NewRun {
  agent: { kind: "fake"; script: string } | { kind: "command"; command: string };
  prompt: string;
  labels?: string;
}

/**
 * Starts a run from the new-run form, as a person does, and returns its id once the page has
 * gone to `#/run/ID`. A refusal (`form-error`) fails the test with its words.
 */
export async function startFromForm(stack: ProductStack, page: Page, run: NewRun): Promise<string> {
  await page.goto(`${stack.base}/#/new`);
  const form = byTestId(page, "new-run-form");
  await shown(form, "the new-run form (#/new, data-testid=new-run-form)", undefined, PAGE_MS);
  await byTestId(form, "agent-kind").selectOption(run.agent.kind);
  if (run.agent.kind === "fake") await byTestId(form, "agent-script").selectOption(run.agent.script);
  else await byTestId(form, "agent-command").fill(run.agent.command);
  await byTestId(form, "prompt").fill(run.prompt);
  if (run.labels !== undefined) await byTestId(form, "labels").fill(run.labels);
  await byTestId(form, "start-run").click();
  const error = byTestId(page, "form-error");
  let runId: string | undefined;
  await until(
    async () => {
      runId = /#\/run\/([^/]+)$/.exec(page.url())?.[1];
      return runId !== undefined || (await error.count()) > 0;
    },
    () => `the form to go to #/run/ID after start-run (the page is at ${page.url()})`,
    WAIT_MS,
  );
  if (runId === undefined) throw new Error(`the new-run form refused the run: ${await error.textContent()}`);
  return decodeURIComponent(runId);
}

/** The run's state row of the page's run list (`#/`), waited for. */
export async function runRow(stack: ProductStack, page: Page, runId: string): Promise<Locator> {
  if (!page.url().endsWith("#/")) await page.goto(`${stack.base}/#/`);
  const row = byTestId(page, "runs-table").locator(`tr[data-run-id="${runId}"]`);
  await shown(
    row,
    `run ${runId} in the run list (#/, runs-table)`,
    () => `the store says ${storedState(stack, runId)}`,
  );
  return row;
}

/** The run's state as the store has it, for a failure message. */
export function storedState(stack: ProductStack, runId: string): string {
  try {
    const r = stack.run(runId);
    const dispatch = r.dispatch
      ? `dispatch ${r.dispatch.state} (attempts ${r.dispatch.attempts}${r.dispatch.endReason ? `, ended ${r.dispatch.endReason}` : ""})`
      : "no dispatch";
    const events = stack.events(runId).map((e) => e.eventType);
    return `run ${runId} is ${r.state}${r.waiting ? ` (${r.waiting})` : ""}, ${dispatch}, events [${events.join(", ")}]`;
  } catch (err) {
    return `the store could not be read: ${(err as Error).message}`;
  }
}
