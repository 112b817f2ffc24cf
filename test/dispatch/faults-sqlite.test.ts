import { join } from "node:path";
import { runPrp } from "../cli/run-cli.js";
import { dispatchFaultSuite } from "./faults-suite.js";

dispatchFaultSuite(
  {
    kind: "SQLite",
    newStore: async (root) => {
      const keyFile = join(root, "secrets", "key");
      const made = runPrp(["authority", "key", "--out", keyFile]);
      if (made.status !== 0) throw new Error(`prp authority key: ${made.stderr}`);
      const location = `sqlite:${join(root, "store")}`;
      return { flags: ["--store", location, "--server-key-file", keyFile], location, keyFile };
    },
  },
  async () => {},
);
