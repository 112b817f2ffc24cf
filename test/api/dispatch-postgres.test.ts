import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { serverKey } from "../authority/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { dispatchApiSuite } from "./dispatch-suite.js";

let server: TestPostgres | undefined;
dispatchApiSuite(
  "PostgreSQL",
  async () => {
    server = await startTestPostgres();
    return PostgresAuthorityStore.open(await server.database(), { serverKey });
  },
  async () => {
    await server?.stop();
  },
);
