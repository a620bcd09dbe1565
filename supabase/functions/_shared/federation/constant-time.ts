// Comparison whose time does not depend on where two byte strings first differ, for MACs
// (RFC 2104 §5 caution; reference A2: never compare MACs with ===).

export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  // Lengths are public (a SHA-256 MAC is always 32 bytes), so leaving early on them leaks nothing.
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index += 1) difference |= a[index]! ^ b[index]!;
  return difference === 0;
}
