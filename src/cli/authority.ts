import type { Command } from "commander";
import { createServerKeyFile } from "../authority/server-key-source.js";
import { StateError } from "../storage/private-sqlite.js";
import { registerAuthorityAdmin } from "./authority-admin.js";
import { CliFailure, MISCONFIGURED, runAction } from "./authority-options.js";
import { registerAuthorityServe } from "./authority-serve.js";
import { registerTokens } from "./authority-tokens.js";
import { registerWorkers } from "./authority-workers.js";

function registerKey(authority: Command): void {
  authority
    .command("key")
    .description("make a new server key file: 32 random bytes as 64 hex digits, mode 600, never over an existing file")
    .requiredOption("--out <file>", "where to write it (its directory is created 700 if missing)")
    .addHelpText(
      "after",
      `
The server key seals every ticket and lease key the store holds: keep it apart from the store
and its backups. A store opens only under the key it was first opened with.

Example:
  prp authority key --out /etc/prp/authority-key`,
    )
    .action((opts: { out: string }) =>
      runAction(async () => {
        try {
          createServerKeyFile(opts.out).destroy();
        } catch (err) {
          if (err instanceof StateError) throw new CliFailure(err.message, MISCONFIGURED);
          throw err;
        }
        console.log(opts.out);
      }),
    );
}

/** `prp authority …`: the deployable authority daemon and the commands that administer its store. */
export function registerAuthority(program: Command): void {
  const authority = program
    .command("authority")
    .description(
      "the control-plane authority: serve runners (serve), and administer its store (key, run create, ticket, command, runs, revoke, token)",
    );
  registerAuthorityServe(authority);
  registerKey(authority);
  registerAuthorityAdmin(authority);
  registerTokens(authority);
  registerWorkers(authority);
}
