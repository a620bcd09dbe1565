// The shipped web script is generated from the partner helper; this fails when someone edits
// one without regenerating the other (npm run build:web -w @capture/federation-dropins).
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { renderWebScript, WEB_SCRIPT_PATH } from '../src/build/build-web-script.ts';

describe('web/federation-handoff.js', () => {
  it('is exactly what the build generates from src/partner/federation-handoff.ts', async () => {
    expect(await readFile(WEB_SCRIPT_PATH, 'utf8')).toBe(await renderWebScript());
  });

  it('is plain JavaScript with no imports, so a browser loads it as shipped', async () => {
    const script = await readFile(WEB_SCRIPT_PATH, 'utf8');
    expect(script).not.toMatch(/^\s*import\s/m);
    expect(script).not.toMatch(/:\s*(string|number|boolean|Uint8Array)\b[,)=]/);
    expect(script).toMatch(/^export async function handOffToCompanion\(/m);
  });
});
