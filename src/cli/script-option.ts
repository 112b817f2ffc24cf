import { resolve } from "node:path";
import type { Command } from "commander";
import { loadScript, resolveScriptPath, type LoadedScript } from "../harness/script-file.js";

/**
 * The script a command was given (a scenario name or a file), loaded and checked against the
 * contract; a missing or refused script ends the command with exit 2 and a message saying why.
 */
export function scriptFromOption(program: Command, nameOrFile: string): LoadedScript {
  let path: string;
  try {
    path = resolve(resolveScriptPath(nameOrFile));
  } catch (err) {
    return program.error((err as Error).message, { exitCode: 2 });
  }
  const loaded = loadScript(path);
  if (!loaded.ok)
    return program.error(
      `script refused: ${loaded.error.code} at ${loaded.error.path || "/"}: ${loaded.error.message}`,
      { exitCode: 2 },
    );
  return loaded.value;
}
