// Nearest-rank percentile of an ascending list, shared by the benchmarks; NaN for an empty list.
export function percentile(sorted: number[], p: number): number {
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ??
    NaN
  );
}
