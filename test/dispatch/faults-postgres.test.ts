import { join } from "node:path";
import { runPrp } from "../cli/run-cli.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { dispatchFaultSuite } from "./faults-suite.js";

let pg: TestPostgres | undefined;
const server = async () => (pg ??= await startTestPostgres());

dispatchFaultSuite(
  {
    kind: "PostgreSQL",
    newStore: async (root) => {
      const keyFile = join(root, "secrets", "key");
      const made = runPrp(["authority", "key", "--out", keyFile]);
      if (made.status !== 0) throw new Error(`prp authority key: ${made.stderr}`);
      const location = await (await server()).database();
      return { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
    },
    outage: {
      pause: async () => (await server()).pause(),
      resume: async () => (await server()).resume(),
    },
  },
  async () => {
    await pg?.stop();
  },
);
