import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The console's page: built into dist/console-web, which the Node server (src/console) serves.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: fileURLToPath(new URL("../../dist/console-web", import.meta.url)), emptyOutDir: true },
});
