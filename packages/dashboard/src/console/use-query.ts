// A read with loading and error state, run again when `deps` change or `reload()` is called.
// For the short admin lists of the Access page, which change only by the person's own actions.
import { type DependencyList, useCallback, useEffect, useState } from 'react';

export type QueryState<T> = { data: T | null; error: string | null; reload: () => void };

export function useQuery<T>(read: () => Promise<T>, deps: DependencyList): QueryState<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names the inputs of read
  useEffect(() => {
    let current = true;
    read().then(
      (value) => {
        if (!current) return;
        setData(value);
        setError(null);
      },
      (readError: Error) => current && setError(readError.message),
    );
    return () => {
      current = false;
    };
  }, [...deps, generation]);
  return { data, error, reload };
}
