// `supabase db advisors` and `supabase db lint` against a database URL, reduced to a verdict:
// no security advisor finding at any level and no lint issue at level error.

import { StackError } from './errors.ts';
import { runSupabaseCli } from './postgres/schema-setup.ts';

export interface AdvisorFinding {
  name: string;
  level: string;
  categories: string[];
  detail: string;
}

export interface LintIssue {
  function: string;
  level: string;
  message: string;
}

export interface DatabaseCheckReport {
  passed: boolean;
  securityFindings: AdvisorFinding[];
  otherFindings: AdvisorFinding[];
  lintErrors: LintIssue[];
}

async function runJson<T>(projectDir: string, args: string[], dbUrl: string): Promise<T> {
  const result = await runSupabaseCli(projectDir, [
    ...args,
    `--remote=${dbUrl}`,
    '--output-format',
    'json',
  ]);
  try {
    return JSON.parse(result.stdout) as T;
  } catch (error) {
    throw new StackError(
      'migration_failed',
      `supabase ${args.join(' ')} gave no JSON (exit ${result.code}):\n${result.stderr}${result.stdout}`,
      { cause: error },
    );
  }
}

export async function runDatabaseChecks(
  projectDir: string,
  dbUrl: string,
): Promise<DatabaseCheckReport> {
  const advisors = await runJson<{ results?: AdvisorFinding[] }>(
    projectDir,
    ['db', 'advisors', '--type', 'all'],
    dbUrl,
  );
  const lint = await runJson<{
    results?: Array<{ function: string; issues: Array<{ level: string; message: string }> }>;
    error?: { message: string };
  }>(projectDir, ['db', 'lint'], dbUrl);
  if (lint.error)
    throw new StackError('migration_failed', `supabase db lint failed: ${lint.error.message}`);
  const findings = advisors.results ?? [];
  const securityFindings = findings.filter((finding) => finding.categories.includes('SECURITY'));
  const lintErrors = (lint.results ?? []).flatMap((entry) =>
    entry.issues
      .filter((issue) => issue.level === 'error')
      .map((issue) => ({ function: entry.function, level: issue.level, message: issue.message })),
  );
  return {
    passed: securityFindings.length === 0 && lintErrors.length === 0,
    securityFindings,
    otherFindings: findings.filter((finding) => !finding.categories.includes('SECURITY')),
    lintErrors,
  };
}
