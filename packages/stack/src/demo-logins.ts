// The demo logins to print after `up`. They are declared once, in supabase/seed.sql, by lines of
// the form `-- demo-login: <email> <password> <what it is>`, so the banner cannot drift from the seed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DemoLogin {
  email: string;
  password: string;
  description: string;
}

export function readDemoLogins(projectDir: string): DemoLogin[] {
  const seed = join(projectDir, 'supabase', 'seed.sql');
  if (!existsSync(seed)) return [];
  return [
    ...readFileSync(seed, 'utf8').matchAll(/^--\s*demo-login:\s*(\S+)\s+(\S+)\s*(.*)$/gm),
  ].map(([, email, password, description]) => ({
    email: email as string,
    password: password as string,
    description: (description ?? '').trim(),
  }));
}
