import { InvalidArgumentError, type Command } from "commander";
import { DEFAULT_DISPATCH } from "../api/dispatch-sweeper.js";
import { workerBody } from "../api/dispatch-view.js";
import { newWorkerCredential } from "../api/worker-credentials.js";
import type { WorkerRow } from "../authority/store.js";
import { writePrivateFile } from "../storage/private-file.js";
import { refusal, runAction, withStore, withStoreOptions, type StoreOptions } from "./authority-options.js";
import { parsePositiveInt } from "./options.js";
import { printableJson, visible } from "./terminal-text.js";

const when = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** As GET /v1/workers shows a worker, with when it was made and revoked. */
const describeWorker = (w: WorkerRow, nowMs: number) => ({
  ...workerBody(w, nowMs, DEFAULT_DISPATCH.graceMs),
  createdAt: when(w.createdAtUnixMs),
  revokedAt: when(w.revokedAtUnixMs),
});

/** A worker's name: what a person calls it in list and revoke. */
function parseName(value: string): string {
  if (/^[a-z0-9][a-z0-9_.-]{0,62}$/.test(value)) return value;
  throw new InvalidArgumentError(`a worker name is a lowercase name (a-z, 0-9, _ . -), got "${value}"`);
}

/** An admission cap's scope: `*` for every run, or `key=value` for runs with that label. */
export function parseCapScope(value: string): string {
  if (value === "*" || /^[a-z0-9][a-z0-9_.-]{0,62}=[^\u0000-\u001f\u007f]{0,256}$/.test(value)) return value;
  throw new InvalidArgumentError(`expected * (every run) or a label as key=value, got "${value}"`);
}

function parseMax(value: string): number {
  if (/^\d{1,6}$/.test(value)) return Number(value);
  throw new InvalidArgumentError(`expected a whole number of runs, 0 or more, got "${value}"`);
}

/** `prp authority worker add|list|revoke` and `prp authority cap set|list|clear`: the run queue's admin side. */
export function registerWorkers(authority: Command): void {
  const worker = authority
    .command("worker")
    .description("the machines that claim queued runs (prp worker): add, list, revoke their credentials");

  withStoreOptions(
    worker
      .command("add")
      .description("make a worker credential; it is shown once and stored only as a digest")
      .argument("<name>", "what you call this worker (unique)", parseName),
  )
    .option("--out <file>", "write the credential to this file (mode 600) instead of printing it")
    .option("--json", "print one JSON line: {workerId, name, createdAt, credential?}")
    .addHelpText(
      "after",
      `
The credential lets a machine run \`prp worker --api URL --token-file FILE\`: it can claim queued
runs and nothing else (not read runs, not create them). Keep it like a password.

Example:
  prp authority worker add build-01 --out ./build-01.credential`,
    )
    .action((name: string, opts: StoreOptions & { out?: string; json?: boolean }) =>
      runAction(async () => {
        const made = newWorkerCredential(name, Date.now());
        await withStore(
          opts,
          async (store) => {
            const inserted = await store.insertWorker(made.row);
            if (!inserted.ok) throw refusal(inserted.error);
          },
          { create: true },
        );
        if (opts.out !== undefined) writePrivateFile(opts.out, `${made.credential}\n`);
        const shown = opts.out === undefined ? { credential: made.credential } : {};
        const { workerId, createdAtUnixMs } = made.row;
        if (opts.json)
          console.log(printableJson(JSON.stringify({ workerId, name, createdAt: when(createdAtUnixMs), ...shown })));
        else {
          console.log(visible(`worker ${workerId} (${name})`));
          console.log(opts.out === undefined ? made.credential : `written to ${visible(opts.out)} (mode 600)`);
        }
      }),
    );

  withStoreOptions(
    worker.command("list").description("the workers: labels, agents advertised, capacity, runs held, last seen"),
  )
    .option("--json", "one JSON line per worker")
    .action((opts: StoreOptions & { json?: boolean }) =>
      runAction(async () => {
        const nowMs = Date.now();
        const workers = await withStore(opts, (store) => store.workers());
        if (workers.length === 0 && !opts.json) console.log("no workers");
        for (const w of workers.map((row) => describeWorker(row, nowMs))) {
          const labels = Object.entries(w.labels).map(([k, v]) => `${k}=${v}`);
          const health = w.revokedAt ? `REVOKED ${w.revokedAt}` : w.health.replace("_", " ");
          console.log(
            opts.json
              ? printableJson(JSON.stringify(w))
              : visible(
                  `${w.workerId}  ${w.name}  ${health}${w.draining ? " (draining)" : ""}  runs ${w.activeRuns}/${w.maxRuns}  last seen ${w.lastSeenAt ?? "never"}${labels.length > 0 ? `  ${labels.join(",")}` : ""}${w.agents.length > 0 ? `  agents ${w.agents.join(",")}` : ""}`,
                ),
          );
        }
      }),
    );

  withStoreOptions(
    worker
      .command("revoke")
      .description("revoke a worker: its polls are refused and its unstarted claims go back to the queue")
      .argument("<worker>", "its id (wkr_…) or name"),
  )
    .option(
      "--max-attempts <n>",
      "as prp authority serve --max-attempts: a run past it ends worker_lost",
      parsePositiveInt,
      DEFAULT_DISPATCH.maxAttempts,
    )
    .action((which: string, opts: StoreOptions & { maxAttempts: number }) =>
      runAction(async () => {
        const revoked = await withStore(opts, async (store) => {
          const found = (await store.workers()).find((w) => w.workerId === which || w.name === which);
          const r = await store.revokeWorker(found?.workerId ?? which, Date.now(), opts.maxAttempts);
          if (!r.ok) throw refusal(r.error);
          return r.value;
        });
        console.log(visible(`revoked ${revoked.workerId} (${revoked.name}) at ${when(revoked.revokedAtUnixMs)}`));
      }),
    );

  const cap = authority
    .command("cap")
    .description("admission caps: at most N claimed runs in all (*) or with a label (key=value); the rest wait queued");

  withStoreOptions(
    cap
      .command("set")
      .description("set a cap; runs over it stay queued (never failed), in priority and submit order")
      .argument("<scope>", "* for every run, or key=value for runs with that label", parseCapScope)
      .argument("<max>", "the most claimed runs at once (0 holds them all)", parseMax),
  ).action((scope: string, max: number, opts: StoreOptions) =>
    runAction(async () => {
      await withStore(
        opts,
        async (store) => {
          const set = await store.setCap(scope, max);
          if (!set.ok) throw refusal(set.error);
        },
        { create: true },
      );
      console.log(visible(`cap ${scope} = ${max}`));
    }),
  );

  withStoreOptions(cap.command("list").description("each cap with how many runs hold a slot of it now"))
    .option("--json", "one JSON line per cap: {scope, max, active}")
    .action((opts: StoreOptions & { json?: boolean }) =>
      runAction(async () => {
        const caps = await withStore(opts, (store) => store.caps());
        if (caps.length === 0 && !opts.json) console.log("no caps");
        for (const c of caps)
          console.log(opts.json ? printableJson(JSON.stringify(c)) : visible(`${c.scope}  ${c.active}/${c.max}`));
      }),
    );

  withStoreOptions(
    cap.command("clear").description("remove a cap").argument("<scope>", "the cap's scope, as set", parseCapScope),
  ).action((scope: string, opts: StoreOptions) =>
    runAction(async () => {
      await withStore(opts, async (store) => {
        const cleared = await store.setCap(scope, null);
        if (!cleared.ok) throw refusal(cleared.error);
      });
      console.log(visible(`cap ${scope} removed`));
    }),
  );
}
