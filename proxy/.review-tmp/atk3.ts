// malicious origin responses through plain-HTTP forwarding
import net from 'node:net';
import { alive, P, raw, sleep } from './lib.ts';

const mode = process.argv[2];
const responses: Record<string, string> = {
  status099: 'HTTP/1.1 099 Weird\r\nContent-Length: 2\r\n\r\nok',
  status600: 'HTTP/1.1 600 Weird\r\nContent-Length: 2\r\n\r\nok',
  dupct:
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok',
  truncated: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\npartial',
  badreason: 'HTTP/1.1 200 O\x7fK\r\nContent-Length: 2\r\n\r\nok',
};
const origin = net
  .createServer((s) => {
    s.once('data', () => {
      s.write(responses[mode]);
      if (mode === 'truncated') setTimeout(() => s.destroy(), 200);
    });
    s.on('error', () => {});
  })
  .listen(0, '127.0.0.1');
await new Promise((r) => origin.once('listening', r));
const op = (origin.address() as any).port;
const { port } = P();
const out = await raw(
  port,
  `GET http://127.0.0.1:${op}/${mode} HTTP/1.1\r\nHost: 127.0.0.1:${op}\r\n\r\n`,
  2500,
);
console.log(mode, JSON.stringify(out.slice(0, 200)));
await sleep(500);
console.log('alive after', alive());
origin.close();
