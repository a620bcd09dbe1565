// Finds the edge functions of a project: each folder of supabase/functions with an index.ts,
// except `_shared` and other folders whose name starts with `_` or `.` (the CLI's rule).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FunctionSource {
  name: string;
  dir: string;
  entrypoint: string;
  verifyJwt: boolean;
}

export function discoverFunctions(
  functionsDir: string,
  settings: Record<string, { verify_jwt: boolean }>,
): FunctionSource[] {
  if (!existsSync(functionsDir)) return [];
  return readdirSync(functionsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !/^[_.]/.test(entry.name))
    .map((entry) => ({
      name: entry.name,
      dir: join(functionsDir, entry.name),
      entrypoint: join(functionsDir, entry.name, 'index.ts'),
      verifyJwt: settings[entry.name]?.verify_jwt ?? true,
    }))
    .filter((fn) => existsSync(fn.entrypoint));
}

/** `supabase/functions/.env`: KEY=VALUE lines, `#` comments, optional quotes. */
export function readFunctionsEnv(functionsDir: string): Record<string, string> {
  const file = join(functionsDir, '.env');
  if (!existsSync(file)) return {};
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith('#')) continue;
    env[match[1] as string] = (match[2] as string).replace(/^(['"])(.*)\1$/, '$2');
  }
  return env;
}
