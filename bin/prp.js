#!/usr/bin/env node
// The package's `prp` command: runs the compiled CLI (built by `npm ci` through `prepare`).
await import("../dist/src/cli/prp.js");
