import { after } from "node:test";
import { openStore, tempRoot } from "../authority/support.js";
import { dispatchApiSuite } from "./dispatch-suite.js";

const tmp = tempRoot("prp-api-dispatch-");
after(() => tmp.cleanup());

dispatchApiSuite(
  "SQLite",
  async () => openStore(tmp.dir()),
  async () => {},
);
