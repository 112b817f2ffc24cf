// The linter: typescript-eslint's recommended rules, and the layer table of docs/architecture.md
// as import boundaries. `npm test` runs it (`npm run lint`).
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { importX } from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";

/**
 * The layers of src/, lowest first (docs/architecture.md, "Layers"): a layer imports only the
 * layers before it in this list, never one after it.
 */
const LAYERS = [
  "contract",
  "client",
  "storage",
  "reducer",
  "bundle",
  "harness",
  "transport",
  "runner",
  "authority",
  "api",
  "console",
  "worker",
  "fault",
  "cli",
];

/** One zone per layer: its folder may not import from any layer above it. */
const layerZones = LAYERS.slice(0, -1).map((layer, index) => ({
  target: `./src/${layer}`,
  from: LAYERS.slice(index + 1).map((above) => `./src/${above}`),
  message: `the ${layer} layer may import only the layers below it (docs/architecture.md, "Layers")`,
}));

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "node_modules/**",
      "protocol/**",
      "src/contract/generated/**",
      "src/contract/api/generated/**",
      "console/web/dist/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.{ts,tsx,js}"],
    plugins: { "import-x": importX },
    settings: {
      // How the rules that read other modules (no-cycle) parse them: as TypeScript.
      "import-x/parsers": { "@typescript-eslint/parser": [".ts", ".tsx"] },
      "import-x/extensions": [".ts", ".tsx", ".js"],
      "import-x/resolver-next": [
        createTypeScriptImportResolver({
          project: ["tsconfig.json", "console/web/tsconfig.json"],
          noWarnOnMultipleProjects: true,
        }),
      ],
    },
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        Buffer: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        URL: "readonly",
      },
    },
    rules: {
      "import-x/no-cycle": "error",
      "import-x/no-restricted-paths": ["error", { zones: layerZones }],
      "import-x/no-self-import": "error",
      "import-x/no-useless-path-segments": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      // The project matches control characters on purpose: to escape them in terminal output and
      // to refuse them in ids, paths and headers.
      "no-control-regex": "off",
    },
  },
  {
    // Tests read event payloads field by field after asserting their shape; typing each would
    // restate the schemas the codec already enforces.
    files: ["test/**/*.{ts,tsx}"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
