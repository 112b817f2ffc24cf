import { createRequire } from "node:module";

/** One sample as parse-prometheus-text-format gives it (histograms carry buckets, count and sum). */
export interface Sample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: string;
  metrics: Sample[];
}

// A real, independent parser of the text format: the check does not trust prom-client's own say.
const parseText = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => MetricFamily[];

/** GETs `url` (no token) and parses it; a non-200 or a wrong content type fails. */
export async function scrape(url: string): Promise<MetricFamily[]> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text}`);
  if (!/^text\/plain; version=0\.0\.4/.test(res.headers.get("content-type") ?? ""))
    throw new Error(`${url}: content type ${res.headers.get("content-type")}`);
  return parseText(text);
}

export function family(families: MetricFamily[], name: string): MetricFamily {
  const f = families.find((m) => m.name === name);
  if (!f) throw new Error(`no metric ${name} in the scrape`);
  return f;
}

/** The sum of `name`'s samples whose labels include `labels` (a histogram's: its count); 0 when none. */
export function value(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  return family(families, name)
    .metrics.filter((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))
    .reduce((n, s) => n + Number(s.value ?? s.count), 0);
}

/**
 * The oracle: each expected figure (from the store, an independent record) against the scrape.
 * Returns one line per difference; an empty list means they agree.
 */
export function scrapeMismatches(
  families: MetricFamily[],
  expected: ReadonlyArray<{ name: string; labels?: Record<string, string>; value: number }>,
): string[] {
  return expected.flatMap((e) => {
    const got = value(families, e.name, e.labels);
    return got === e.value ? [] : [`${e.name}${JSON.stringify(e.labels ?? {})}: scraped ${got}, store says ${e.value}`];
  });
}
