import http from 'node:http';
import { alive, P, raw, sleep } from './lib.ts';

const origin = http
  .createServer((q, r) => {
    r.end('ok');
  })
  .listen(0, '127.0.0.1');
await new Promise((r) => origin.once('listening', r));
const op = (origin.address() as any).port;
const { port } = P();
const variant = process.argv[2];
const lines: Record<string, string> = {
  absolute: `GET http://127.0.0.1:${op}/x HTTP/1.1\r\nHost: a\r\n\r\n`,
  star: `OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n`,
};
const out = await raw(
  port,
  `CONNECT 127.0.0.1:${op} HTTP/1.1\r\nHost: 127.0.0.1:${op}\r\n\r\n` + lines[variant],
  800,
);
console.log(JSON.stringify(out.slice(0, 300)));
await sleep(700);
console.log('alive after', alive());
origin.close();
