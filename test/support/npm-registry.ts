import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A package the registry serves: its package.json and its other files. */
export interface TestPackage {
  manifest: { name: string; version: string; [field: string]: unknown };
  files?: Record<string, string>;
}

/** A registry on 127.0.0.1 serving packed test packages, and npm settings that use it and nothing else. */
export interface TestRegistry {
  url: string;
  /** npm's environment for this registry: its own cache, no user or global .npmrc. */
  env(cache: string): NodeJS.ProcessEnv;
  /** Every path asked for, in order. */
  requests: string[];
  /** Stops serving (npm's requests are refused from now on) but keeps the settings env() names. */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Packs each package with the real `npm pack` and serves its packument and tarball, so that the
 * tests run the real npm against a registry of their own: no test reaches the network.
 */
export async function startTestRegistry(packages: TestPackage[]): Promise<TestRegistry> {
  const root = mkdtempSync(join(tmpdir(), "prp-test-registry-"));
  // Empty user and global .npmrc (npm refuses one file as both): only what env() says counts.
  const config = join(root, "npmrc");
  const globalConfig = join(root, "npmrc-global");
  writeFileSync(config, "");
  writeFileSync(globalConfig, "");
  const tarballs = new Map<string, { manifest: TestPackage["manifest"]; tgz: Buffer }>();
  for (const [i, p] of packages.entries()) {
    const src = join(root, `src-${i}`);
    mkdirSync(src);
    writeFileSync(join(src, "package.json"), JSON.stringify(p.manifest));
    for (const [path, text] of Object.entries(p.files ?? {})) writeFileSync(join(src, path), text, { mode: 0o755 });
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", root], {
        cwd: src,
        encoding: "utf8",
        env: { ...process.env, npm_config_userconfig: config, npm_config_globalconfig: globalConfig },
      }),
    ) as Array<{ filename: string }>;
    tarballs.set(`${p.manifest.name}@${p.manifest.version}`, {
      manifest: p.manifest,
      tgz: readFileSync(join(root, packed[0]!.filename)),
    });
  }
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(req.url ?? "/").slice(1);
    requests.push(path);
    const tarball = /^(.+)\/-\/.+-(\d+\.\d+\.\d+)\.tgz$/.exec(path);
    if (tarball) {
      const found = tarballs.get(`${tarball[1]}@${tarball[2]}`);
      res.writeHead(found ? 200 : 404).end(found?.tgz);
      return;
    }
    const versions = [...tarballs.values()].filter((t) => t.manifest.name === path);
    if (versions.length === 0) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not found"}');
      return;
    }
    const packument = {
      name: path,
      "dist-tags": { latest: versions.at(-1)!.manifest.version },
      versions: Object.fromEntries(
        versions.map(({ manifest, tgz }) => [
          manifest.version,
          {
            ...manifest,
            dist: {
              tarball: `${url}${manifest.name}/-/${manifest.name.split("/").at(-1)}-${manifest.version}.tgz`,
              integrity: `sha512-${createHash("sha512").update(tgz).digest("base64")}`,
              shasum: createHash("sha1").update(tgz).digest("hex"),
            },
          },
        ]),
      ),
    };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}/`;
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const npmEnv = (registry: string, cache: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: root,
    npm_config_registry: registry,
    npm_config_cache: cache,
    npm_config_userconfig: config,
    npm_config_globalconfig: globalConfig,
    npm_config_update_notifier: "false",
    npm_config_fetch_retries: "0",
  });
  return {
    url,
    requests,
    env: (cache) => npmEnv(url, cache),
    stop,
    close: async () => {
      await stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
