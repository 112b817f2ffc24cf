import { productScenario } from "./e2e-scenario.js";

// A PostgreSQL of this file's own: PRP_TEST_POSTGRES_URL, else the embedded server.
productScenario("postgres");
