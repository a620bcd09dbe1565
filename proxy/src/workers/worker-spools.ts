// Where each worker process spools captures while Postgres is away (docs/proxy.md "The capture
// writer", "Worker processes"): worker 0 keeps the daemon's own spool folder, so a daemon that
// runs one process or many replays the same file, and worker N its own `worker-N` folder inside
// it. A worker that is restarted replays its own file. When the daemon starts, before any writer
// runs, every worker's file is moved into the daemon's, so captures spooled by a worker that this
// start does not run again (fewer workers, one process) are still written, exactly once.
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const SPOOL_FILES = ['captures.jsonl.replaying', 'captures.jsonl'];

export function workerSpoolDir(spoolDir: string, index: number): string {
  return index === 0 ? spoolDir : join(spoolDir, `worker-${index}`);
}

/** Moves every worker's spooled captures into `spoolDir/captures.jsonl`; returns the lines moved. */
export function gatherWorkerSpools(spoolDir: string): number {
  if (!existsSync(spoolDir)) return 0;
  let moved = 0;
  for (const folder of readdirSync(spoolDir, { withFileTypes: true })) {
    if (!folder.isDirectory() || !/^worker-\d+$/.test(folder.name)) continue;
    for (const name of SPOOL_FILES) {
      const file = join(spoolDir, folder.name, name);
      if (!existsSync(file)) continue;
      const text = readFileSync(file, 'utf8');
      const lines = text.split('\n').filter((line) => line.trim() !== '');
      if (lines.length > 0)
        appendFileSync(join(spoolDir, 'captures.jsonl'), `${lines.join('\n')}\n`);
      moved += lines.length;
      rmSync(file);
    }
  }
  return moved;
}
