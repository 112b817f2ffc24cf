#!/usr/bin/env node
// The package's `prp-runnerd` command: runs the compiled runner daemon (built by `npm ci` through `prepare`).
// The bootstrap ticket (and the fault-injection crash point) leave the environment here, before
// any module is loaded: nothing the runner imports can see them there.
const bootstrapTicket = process.env.PAPERCLIP_RUNNER_BOOTSTRAP_TICKET ?? null;
const crashAt = process.env.PRP_RUNNER_CRASH_AT;
delete process.env.PAPERCLIP_RUNNER_BOOTSTRAP_TICKET;
delete process.env.PRP_RUNNER_CRASH_AT;
const { handoff } = await import("../dist/src/cli/runnerd-handoff.js");
handoff.bootstrapTicket = bootstrapTicket;
handoff.crashAt = crashAt;
await import("../dist/src/cli/runnerd.js");
