import { readFileSync, statSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { extname, join, normalize, sep } from "node:path";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
};

/**
 * Serves the built page (Vite's output) from `root`: `/` is index.html, anything else must be
 * a file under root, and `page` may adapt index.html. The page is built by `npm run build`;
 * without it, says so.
 */
export function serveStatic(
  root: string,
  pathname: string,
  res: ServerResponse,
  page: (html: Buffer) => Buffer = (html) => html,
): void {
  const relativePath = normalize(decodeURIComponent(pathname === "/" ? "/index.html" : pathname)).replace(
    /^([/\\])+/,
    "",
  );
  const path = join(root, relativePath);
  if (relativePath.startsWith("..") || !path.startsWith(root + sep)) return void res.writeHead(404).end("not found");
  let body: Buffer;
  try {
    if (!statSync(path).isFile()) return void res.writeHead(404).end("not found");
    body = readFileSync(path);
    if (relativePath === "index.html") body = page(body);
  } catch {
    if (relativePath === "index.html")
      return void res
        .writeHead(500, { "content-type": "text/plain" })
        .end("the console's page is not built: run npm run build\n");
    return void res.writeHead(404).end("not found");
  }
  res.writeHead(200, {
    "content-type": TYPES[extname(path)] ?? "application/octet-stream",
    // Vite names assets by content hash; index.html must always be fresh.
    "cache-control": relativePath === "index.html" ? "no-store" : "max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
  });
  res.end(body);
}
