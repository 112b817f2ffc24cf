/**
 * Loaded (`--import`) into each test process of the fast tier: starting a child process there
 * throws, so a file that spawns in a way `run-tests.ts` did not see fails instead of quietly
 * making the tier slow. `node --test` itself spawns the test processes, so only they are
 * guarded (the runner marks them with NODE_TEST_CONTEXT).
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";

if (process.env.NODE_TEST_CONTEXT) {
  const names = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;
  for (const name of names) {
    (childProcess as unknown as Record<string, unknown>)[name] = () => {
      throw new Error(
        `the fast tier starts no child process (child_process.${name} called); a test that needs one belongs to the whole suite only`,
      );
    };
  }
  // Named imports of a builtin (`import { spawn } from "node:child_process"`) see the change only after this.
  syncBuiltinESMExports();
}
