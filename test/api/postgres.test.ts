import { PostgresAuthorityStore } from "../../src/authority/postgres-store.js";
import { serverKey } from "../authority/support.js";
import { startTestPostgres, type TestPostgres } from "../support/postgres.js";
import { apiSuite } from "./suite.js";

let server: TestPostgres | undefined;
apiSuite(
  "PostgreSQL",
  async () => {
    server = await startTestPostgres();
    return PostgresAuthorityStore.open(await server.database(), { serverKey });
  },
  async () => {
    await server?.stop();
  },
);
