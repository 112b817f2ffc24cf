/**
 * A runner in a process of its own for heartbeat tests that stop it (SIGSTOP): it dials the
 * given URL with the given bootstrap ticket, answers every ping with a pong, prints one line
 * per event (`connected`, `ping`) on stdout, and exits when its channel closes.
 *
 *   node pong-runner-child.js URL TOKEN
 */
import type { SecureChannel, RunnerToCoreKind } from "../../src/transport/index.js";
import { connectRunner } from "./support.js";

const [url, token] = process.argv.slice(2);
let channel: SecureChannel<RunnerToCoreKind> | null = null;
const opened = await connectRunner(
  url!,
  { kind: "bootstrap", token: token! },
  {
    onEnvelope: (envelope) => {
      if (envelope.kind !== "ping") return;
      channel?.send("pong", { lifecycle: "ready", outboxBytes: 0, ackedSourceSeq: 0 });
      process.stdout.write("ping\n");
    },
    onClose: () => process.exit(0),
  },
);
if (!opened.ok) {
  process.stderr.write(`${opened.error.code}: ${opened.error.message}\n`);
  process.exit(1);
}
channel = opened.value.channel;
process.stdout.write("connected\n");
