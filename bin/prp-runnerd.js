#!/usr/bin/env node
// The package's `prp-runnerd` command: runs the compiled runner daemon (built by `npm ci` through `prepare`).
// The bootstrap ticket leaves the environment here, before any module is loaded: nothing the
// runner imports can see it there.
const bootstrapTicket = process.env.PAPERCLIP_RUNNER_BOOTSTRAP_TICKET ?? null;
delete process.env.PAPERCLIP_RUNNER_BOOTSTRAP_TICKET;
// The runtime-activity helper subcommands (runtime.md §13.2) start without the daemon's modules.
if (["notification-context", "record-activity"].includes(process.argv[2])) {
  await import("../dist/src/cli/runnerd-activity-main.js");
} else {
  const { handoff } = await import("../dist/src/runner/runnerd-handoff.js");
  handoff.bootstrapTicket = bootstrapTicket;
  await import("../dist/src/cli/runnerd.js");
}
