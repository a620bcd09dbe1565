import http from 'node:http';
import net from 'node:net';

console.log('isIP zone', net.isIP('fe80::1%lo'), net.isIP('::1%25lo'));
const b = new net.BlockList();
b.addSubnet('127.0.0.0', 8, 'ipv4');
for (const a of ['fe80::1%lo', '::1%x']) {
  try {
    console.log('check', a, b.check(a, 'ipv6'));
  } catch (e) {
    console.log('check throws', a, (e as Error).message);
  }
}
try {
  http
    .request({ host: '127.0.0.1', port: 9, headers: ['x-a', 'a\x01b'], agent: false })
    .on('error', () => {});
  console.log('no throw');
} catch (e) {
  console.log('request throws', (e as Error).message);
}
