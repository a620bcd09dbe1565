import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
export const P = () => JSON.parse(readFileSync('/tmp/proxy-review/proxy.json', 'utf8'));
export const DB = () => JSON.parse(readFileSync('/tmp/proxy-review/db.json', 'utf8'));
export function alive(): boolean {
  return !existsSync('/tmp/proxy-review/proxy-exit.txt');
}
export function raw(
  port: number,
  data: string | Buffer,
  waitMs = 800,
  closeAfterWrite = false,
): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('error', (e) => (out += `<<error ${e.message}>>`));
    s.on('connect', () => {
      s.write(data);
      if (closeAfterWrite) s.destroy();
    });
    setTimeout(() => {
      s.destroy();
      resolve(out);
    }, waitMs);
    s.on('close', () => setTimeout(() => resolve(out), 10));
  });
}
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
