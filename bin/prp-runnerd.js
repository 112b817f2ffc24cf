#!/usr/bin/env node
// The package's `prp-runnerd` command: runs the compiled runner daemon (built by `npm ci` through `prepare`).
await import("../dist/src/cli/runnerd.js");
