/**
 * Benchmark helpers: every figure is a ratio against a baseline measured in the same process,
 * so the numbers mean the same on a fast or a slow machine. Nothing here asserts a speed.
 */
export interface Rate {
  name: string;
  perSecond: number;
}

export interface Case<T> {
  name: string;
  items: readonly T[];
  fn: (item: T) => unknown;
}

let sink = 0;

function pass<T>(c: Case<T>): void {
  for (const item of c.items) if (c.fn(item)) sink++;
}

/**
 * Measures several cases in interleaved rounds (A B C, A B C, …) so that a busy moment of the
 * machine hits every case alike, and reports each case's median rate in items per second.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- cases of different state types, each used only with its own
export function compare(cases: Array<Case<any>>, rounds = 7, msPerRound = 300): Rate[] {
  for (const c of cases) for (let i = 0; i < 3; i++) pass(c); // warm-up: let the JIT settle
  const samples: number[][] = cases.map(() => []);
  for (let r = 0; r < rounds; r++) {
    cases.forEach((c, i) => {
      let done = 0;
      let elapsed = 0;
      const start = process.hrtime.bigint();
      while (elapsed < msPerRound) {
        pass(c);
        done += c.items.length;
        elapsed = Number(process.hrtime.bigint() - start) / 1e6;
      }
      samples[i]!.push((done / elapsed) * 1000);
    });
  }
  if (sink < 0) console.log(sink); // keep the work observable so it is not optimised away
  return cases.map((c, i) => ({ name: c.name, perSecond: median(samples[i]!) }));
}

/** The value below which a fraction `q` (0–1) of the samples lie: nearest rank, no interpolation. */
export const percentile = (xs: readonly number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

export const median = (xs: readonly number[]): number => percentile(xs, 0.5);

export const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

export function report(title: string, rates: Rate[]): void {
  console.log(title);
  for (const r of rates) console.log(`  ${r.name.padEnd(44)} ${fmt(r.perSecond).padStart(12)} /s`);
}
