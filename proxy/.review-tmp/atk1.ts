import { alive, P, raw, sleep } from './lib.ts';

const { mgmt } = P();
const auth = Buffer.from('de000000-0000-4000-8000-000000000001:whatever').toString('base64');
console.log('alive before', alive());
await raw(
  mgmt,
  `POST /allocate HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${auth}\r\nContent-Length: 100\r\n\r\n{"uuid":`,
  300,
  false,
);
await sleep(500);
console.log('alive after', alive());
