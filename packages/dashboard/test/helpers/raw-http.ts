// Raw HTTP requests for server tests: the exact request target is sent as written (fetch and
// URL would normalize `..` and `%2e%2e` away before the server ever saw them).
import http from 'node:http';

export type RawResponse = { status: number; headers: http.IncomingHttpHeaders; body: string };

export function sendRaw(baseUrl: string, target: string, method = 'GET'): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: hostname, port, method, path: target }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}
