// Timing of repeated calls for the benchmarks: p50/p95 after one warm-up, failures counted.
import { percentile } from './percentile.ts';

export interface Timing {
  p50: number;
  p95: number;
  failures: number;
  lastError: string;
}

/** p50/p95 of `count` calls after one warm-up; a failed call is counted, not thrown. */
export async function timeCalls(call: () => Promise<void>, count: number): Promise<Timing> {
  await call().catch(() => undefined);
  const times: number[] = [];
  let failures = 0;
  let lastError = '';
  for (let run = 0; run < count; run += 1) {
    const started = performance.now();
    try {
      await call();
    } catch (error) {
      failures += 1;
      lastError = (error as Error).message.slice(0, 120);
    }
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95), failures, lastError };
}

/** "p50 / p95", with the failures when there were any. */
export function timingCell(timing: Timing | undefined, digits = 1): string {
  if (!timing) return '–';
  const failed = timing.failures ? ` (${timing.failures} failed: ${timing.lastError})` : '';
  return `${timing.p50.toFixed(digits)} / ${timing.p95.toFixed(digits)}${failed}`;
}
