import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GOLDEN_DIR, loadCatalog } from "../src/contract/catalog.js";
import { paritySummary, prettyJson, replayFixture } from "../src/reducer/index.js";
import type { GeneratedFile } from "./generator.js";

export interface AcceptedReplayFixture {
  /** The file name without `.json`, which names its goldens. */
  name: string;
  path: string;
}

const REPLAY_DIR = "replay/";

/** The replay fixtures protocol/catalog.json expects to be accepted, sorted by name. Rejected ones get no golden. */
export function acceptedReplayFixtures(protocolRoot: string): AcceptedReplayFixture[] {
  return [...loadCatalog(protocolRoot).entries]
    .filter(
      ([path, entry]) => path.startsWith(REPLAY_DIR) && !path.startsWith(GOLDEN_DIR) && entry.expectation === "accept",
    )
    .map(([path]) => ({
      name: path.slice(REPLAY_DIR.length, -".json".length),
      path: join(protocolRoot, "fixtures", path),
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export const goldenDir = (protocolRoot: string): string => join(protocolRoot, "fixtures", GOLDEN_DIR);
export const snapshotGolden = (protocolRoot: string, name: string): string =>
  join(goldenDir(protocolRoot), `${name}.snapshot.json`);
export const summaryGolden = (protocolRoot: string, name: string): string =>
  join(goldenDir(protocolRoot), `${name}.summary.json`);

/** The snapshot and summary golden of every accepted replay fixture, as the reducer produces them now. */
export function replayGoldenFiles(protocolRoot: string): GeneratedFile[] {
  return acceptedReplayFixtures(protocolRoot).flatMap(({ name, path }) => {
    const replayed = replayFixture(readFileSync(path));
    if (!replayed.ok) {
      const { code, path: at, message } = replayed.error;
      throw new Error(`${path} is cataloged as accepted but is rejected: ${code} at ${at || "/"}: ${message}`);
    }
    return [
      { path: snapshotGolden(protocolRoot, name), text: prettyJson(replayed.snapshot) },
      { path: summaryGolden(protocolRoot, name), text: prettyJson(paritySummary(replayed.snapshot)) },
    ];
  });
}

/** Files in the golden directory that no accepted fixture produces (left behind by a removed or now-rejected fixture). */
export function orphanGoldens(protocolRoot: string, files: GeneratedFile[]): string[] {
  const produced = new Set(files.map((f) => f.path));
  let present: string[];
  try {
    present = readdirSync(goldenDir(protocolRoot)).map((entry) => join(goldenDir(protocolRoot), entry));
  } catch {
    return [];
  }
  return present.filter((path) => !produced.has(path)).sort();
}
