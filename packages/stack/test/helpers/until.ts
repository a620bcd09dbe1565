// Polls until `read` yields a value (anything but undefined) or the time is up: for effects that
// arrive asynchronously (a Realtime event, a row written by a service, a process state).
export async function until<T>(
  read: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
