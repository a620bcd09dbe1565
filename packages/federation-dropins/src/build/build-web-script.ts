// Generates the web drop-in, web/federation-handoff.js, from the single-file partner helper:
// Node's type stripping (the source is erasable-syntax TypeScript with no imports), then Biome's
// formatter, so the shipped file is plain, readable ES2020 a browser loads as a module.
// Run: npm run build:web -w @capture/federation-dropins. A test fails when the file is stale.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import { fileURLToPath } from 'node:url';

export const WEB_SCRIPT_SOURCE = fileURLToPath(
  new URL('../partner/federation-handoff.ts', import.meta.url),
);
export const WEB_SCRIPT_PATH = fileURLToPath(
  new URL('../../web/federation-handoff.js', import.meta.url),
);
const BIOME = fileURLToPath(new URL('../../../../node_modules/.bin/biome', import.meta.url));

const HEADER = `// GENERATED from src/partner/federation-handoff.ts by src/build/build-web-script.ts; do not edit.
// Federation hand-off web drop-in (spec 000 §4.4). Load with <script type="module">.
`;

function formatWithBiome(source: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIOME, ['format', `--stdin-file-path=${WEB_SCRIPT_PATH}`], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (status) => {
      if (status === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`biome format failed: ${Buffer.concat(err).toString('utf8')}`));
    });
    child.stdin.end(source);
  });
}

/** The web script as it should be on disk. */
export async function renderWebScript(): Promise<string> {
  const typescript = await readFile(WEB_SCRIPT_SOURCE, 'utf8');
  const javascript = stripTypeScriptTypes(typescript, { mode: 'strip' })
    // Doc comments of types and interface members are left above the blank their code became.
    .replace(/^[ \t]*\/\*\*(?:(?!\*\/)[\s\S])*\*\/[ \t]*\n(?=[ \t]*\n)/gm, '');
  return formatWithBiome(HEADER + javascript);
}

if (import.meta.main) {
  await writeFile(WEB_SCRIPT_PATH, await renderWebScript());
}
