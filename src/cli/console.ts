import type { Command } from "commander";
import { ReplaySource } from "../console/replay-source.js";
import type { RunSource } from "../console/run-source.js";
import { refusal, runAction, withStoreOptions, type StoreOptions } from "./authority-options.js";
import { parseListen } from "./authority-serve.js";
import { DEFAULT_CONSOLE_LISTEN, startConsole, storeSource, untilStopped } from "./console-serve.js";
import { parsePositiveInt } from "./options.js";

interface ConsoleCliOptions extends StoreOptions {
  listen: { host: string; port: number };
  pollMs: number;
  bundlesDir?: string;
}

export function registerConsole(program: Command): void {
  withStoreOptions(
    program
      .command("console")
      .description(
        "a live console in the browser: runs, each run's timeline and session, answers to its questions, interrupt and cancel; or step through a replayed FILE",
      )
      .argument(
        "[file]",
        "instead of the store: a replay fixture (.json) or an NDJSON transcript (.ndjson, .jsonl) to step through",
      ),
  )
    .option(
      "--listen <host:port>",
      "where the console listens (default 127.0.0.1:0, a free port); a warning when it is not loopback",
      parseListen,
      DEFAULT_CONSOLE_LISTEN,
    )
    .option("--poll-ms <n>", "how often the store is read for new events and command results", parsePositiveInt, 200)
    .option(
      "--bundles-dir <dir>",
      "where runs' native execution bundles are: DIR/<runId>/bundle/ (prp demo's layout: .prp/demo)",
    )
    .addHelpText(
      "after",
      `
Prints the console's URL with a random access token (like Jupyter's) on stdout: open it in a
browser (a new tab needs it again). An API request without the token gets 401. Runs until Ctrl-C (SIGINT) or SIGTERM.

Reads the authority's store beside a running daemon (prp authority serve), as prp events does;
commands from the page (request.resolve, turn.interrupt, run.cancel) go through the command
queue and its contract codec, and the daemon delivers them. prp authority serve --console
serves the same page from the daemon itself.

Examples:
  prp console --store sqlite:/var/lib/prp/authority --server-key-file key
  prp console protocol/fixtures/replay/happy-path.json
  prp console .prp/demo/RUN/bundle/transcript.ndjson`,
    )
    .action((file: string | undefined, opts: ConsoleCliOptions) =>
      runAction(async () => {
        let source: RunSource;
        if (file !== undefined) {
          const replay = ReplaySource.open(file);
          if (!replay.ok) throw refusal(replay.error);
          source = replay.value;
        } else source = await storeSource(opts);
        const server = await startConsole(source, opts.listen, {
          pollMs: opts.pollMs,
          ...(opts.bundlesDir ? { bundlesDir: opts.bundlesDir } : {}),
        });
        await untilStopped();
        await server.close();
        return 0;
      }),
    );
}
