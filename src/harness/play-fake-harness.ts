import { BatchedLineWriter } from "./batched-writer.js";
import { FAKE_CREDENTIAL_FILE_ENV } from "./fake-credentials.js";
import { FakeHarness, type Script } from "./fake-harness.js";
import { FAKE_HARNESS_JOURNAL_ENV } from "./goal-journal.js";
import { parseHarnessCommand } from "./harness-protocol.js";
import { BoundedLineReader } from "./line-reader.js";

/** Plays a script as a fake harness over this process's stdio, then exits with the script's code. */
export async function playFakeHarness(script: Script, delayMs?: number): Promise<void> {
  const stdout = new BatchedLineWriter(process.stdout);
  const harness = new FakeHarness(
    script,
    {
      writeStdout: (line) => stdout.write(line),
      writeStderr: (line) => process.stderr.write(`${line}\n`),
      exit: (code) => stdout.flush(() => process.exit(code)),
    },
    {
      ...(delayMs === undefined ? {} : { delayMs }),
      ...(process.env[FAKE_CREDENTIAL_FILE_ENV] ? { credentialFile: process.env[FAKE_CREDENTIAL_FILE_ENV] } : {}),
      ...(process.env[FAKE_HARNESS_JOURNAL_ENV] ? { journalPath: process.env[FAKE_HARNESS_JOURNAL_ENV] } : {}),
    },
  );
  const reader = new BoundedLineReader();
  process.stdin.on("data", (chunk: Buffer) => {
    for (const e of reader.push(chunk)) {
      const command = e.kind === "line" ? parseHarnessCommand(e.text) : null;
      if (command) harness.receive(command);
    }
  });
  process.stdin.on("end", () => harness.closeInput());
  await harness.run();
}
