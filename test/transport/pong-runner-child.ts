/**
 * A runner in a process of its own for heartbeat tests that stop it (SIGSTOP): it dials the
 * given URL with the given bootstrap ticket; its WebSocket answers each of the core's pings
 * with a pong, as every runner's does. It prints one line per event (`connected`, `ping`) on
 * stdout, and exits when its channel closes.
 *
 *   node pong-runner-child.js URL TOKEN
 */
import { connectRunner } from "./support.js";

const [url, token] = process.argv.slice(2);
const opened = await connectRunner(
  url!,
  { kind: "bootstrap", token: token! },
  { onEnvelope: () => {}, onClose: () => process.exit(0) },
  {},
  (ws) => ws.on("ping", () => process.stdout.write("ping\n")),
);
if (!opened.ok) {
  process.stderr.write(`${opened.error.code}: ${opened.error.message}\n`);
  process.exit(1);
}
process.stdout.write("connected\n");
