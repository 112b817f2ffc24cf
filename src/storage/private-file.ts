import { chmodSync, renameSync, rmSync, writeFileSync } from "node:fs";

/**
 * Writes a file only its owner can read (0600). Written beside, then renamed over: a reader
 * sees the old file or the new one, never half of one.
 */
export function writePrivateFile(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  rmSync(temporary, { force: true });
  writeFileSync(temporary, text, { mode: 0o600, flag: "wx" });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}
