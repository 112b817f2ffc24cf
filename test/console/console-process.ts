import { spawnPrp, type Child } from "../cli/authority-processes.js";
import { until } from "../support/until.js";

/** A started `prp console …` (or `prp authority serve --console`): its URL with the token, and its base. */
export interface ConsoleProcess extends Child {
  url: string;
  base: string;
  token: string;
}

/** Starts `prp ARGS` and waits for the console's URL (the first stdout line that is one). */
export async function startConsole(args: string[]): Promise<ConsoleProcess> {
  const child = spawnPrp(args);
  const url = () => /(http:\/\/\S+\?token=[0-9a-f]{64})/.exec(child.stdout())?.[1];
  await until(
    () => url() !== undefined || child.stderr().includes("prp: "),
    () => `the console to print its URL; stderr: ${child.stderr()}`,
    30_000,
  );
  const found = url();
  if (found === undefined) {
    child.kill("SIGKILL");
    throw new Error(`the console did not start: ${child.stderr()}`);
  }
  const parsed = new URL(found);
  return { ...child, url: found, base: parsed.origin, token: parsed.searchParams.get("token")! };
}
