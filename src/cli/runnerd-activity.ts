import type { Command } from "commander";
import { captureContext, recordActivity, type HelperOutcome } from "../runner/activity/activity-client.js";
import { CONTEXT_ENV, HELPER_ENV, SECRET_ENV } from "../harness/notification-env.js";
import { parsePositiveInt } from "./options.js";

const DEFAULT_TIMEOUT_MS = 60_000;

/** Prints the refusal for a person and exits with its status; exits 0 on success. */
function finish(name: string, outcome: HelperOutcome, onOk: (ok: Extract<HelperOutcome, { ok: true }>) => void): never {
  if (outcome.ok) {
    onOk(outcome);
    process.exit(0);
  }
  process.stderr.write(`prp-runnerd ${name}: ${outcome.code}: ${outcome.message}\n`);
  process.exit(outcome.exitCode);
}

/**
 * The local client side of runtime activity (runtime.md §13.2), as prp-runnerd subcommands: a
 * harness or a tool it runs finds this command in PAPERCLIP_RUNTIME_NOTIFICATION_HELPER.
 */
export function addActivityCommands(program: Command): void {
  const exits = `
Every request carries ${SECRET_ENV}, the secret the runner gave the harness it
is running now (the helper reads it from its environment): a process without it, another run's
harness, or an earlier harness of this run is refused (generation_refused).

Exit status: 0 done; 2 invalid arguments (nothing was sent); 3 refused by the runner (not the
current harness's secret, an invalidated context, or a run that has ended: nothing was recorded); 4 no runner serves the
endpoint, or it went away before it answered.`;
  // A usage error (a missing argument, an unknown option) is an invalid argument too: status 2,
  // through the exit override these commands inherit from prp-runnerd (usage-exit.ts).
  program
    .command("notification-context")
    .description(
      "print the runner's current opaque runtime-activity context as one line (capture it before an operation)",
    )
    .option("--timeout-ms <n>", "how long to wait for the runner", parsePositiveInt, DEFAULT_TIMEOUT_MS)
    .addHelpText(
      "after",
      `
Reads the endpoint descriptor named by ${CONTEXT_ENV} (a private 0600 file the runner wrote)
and asks the runner serving its socket for the context. A runner recovery or a warm attachment
replaces the context: a record with an older one is refused.
${exits}`,
    )
    .action(async (options: { timeoutMs: number }) => {
      finish("notification-context", await captureContext(process.env, options.timeoutMs), (ok) =>
        process.stdout.write(`${ok.context}\n`),
      );
    });
  program
    .command("record-activity")
    .description("record one runtime.activity.recorded event for the run, after an operation succeeded")
    .argument("<CONTEXT>", "what notification-context printed before the operation")
    .argument("<NAMESPACE>", "groups the producer's activity types (1-160 code points, no control character, no DEL)")
    .argument("<ACTIVITY_KEY>", "names the activity within the namespace (the same rule)")
    .option(
      "--timeout-ms <n>",
      "how long to wait for the runner to commit the event",
      parsePositiveInt,
      DEFAULT_TIMEOUT_MS,
    )
    .addHelpText(
      "after",
      `
Exits 0 only once the runner has committed the event: in durable mode to its outbox (from
there it reaches the authority exactly once, across runner restarts); in local mode to its
stdout stream. Each successful call records one event, so call it once per successful
operation. The run and session come from the runner's binding; the caller cannot name them.
A non-zero exit recorded nothing, except status 4 after the request was sent ("may or may not
be recorded"): when the runner went away, its recovery refuses this context, so a retry with it
can never record the activity twice; after --timeout-ms with the runner still up, it may still
commit the event. The runner puts this command in ${HELPER_ENV}.
${exits}`,
    )
    .action(async (context: string, namespace: string, activityKey: string, options: { timeoutMs: number }) => {
      finish(
        "record-activity",
        await recordActivity(process.env, context, namespace, activityKey, options.timeoutMs),
        () => {},
      );
    });
}
