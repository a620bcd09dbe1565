// har-validator 5 ships no types: `har(data)` resolves with the data when it conforms to the HAR
// 1.2 schema and rejects with a HARError otherwise.
declare module 'har-validator' {
  export function har(data: unknown): Promise<unknown>;
}
