// The capture's timings (docs/proxy.md "The capture row": `connect`, `tls`, `send`, `wait`,
// `receive`, `total`): milliseconds since a `performance.now()` start, to a hundredth.

/** Milliseconds since `start`, rounded to 0.01 ms as every timing in a payload is. */
export function elapsedMs(start: number): number {
  return Math.round((performance.now() - start) * 100) / 100;
}
