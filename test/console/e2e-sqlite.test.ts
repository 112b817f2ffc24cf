import { productScenario } from "./e2e-scenario.js";

productScenario("sqlite");
