// Requests tests send through the proxy on a connection of their own (agent: false), so a daemon
// with several workers may take each on another one: one plain-HTTP request in absolute form, and
// the set-up page's live check as its EventSource reads it.
import http from 'node:http';
import type { SetupStatus } from '../../src/setup/setup-page.ts';

export interface ProxiedAnswer {
  status?: number;
  body?: string;
  /** The socket error's code, when there was no answer. */
  error?: string;
}

export function requestThroughProxy(options: {
  proxyPort: number;
  url: string;
  /** The client's address (a loopback alias standing in for a phone). */
  from?: string;
}): Promise<ProxiedAnswer> {
  return new Promise((resolve) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port: options.proxyPort,
        path: options.url,
        localAddress: options.from,
        agent: false,
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode, body }));
        response.on('error', (error: NodeJS.ErrnoException) =>
          resolve({ error: error.code ?? error.message }),
        );
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ error: error.code ?? error.message }),
    );
    request.end();
  });
}

/** The live check's event stream (`/setup/<token>/status`), every status as it arrives. */
export function watchSetupStatus(options: {
  host: string;
  port: number;
  path: string;
  from?: string;
}): Promise<{ events: SetupStatus[]; close(): void }> {
  return new Promise((resolve, reject) => {
    const events: SetupStatus[] = [];
    const request = http.get(
      {
        host: options.host,
        port: options.port,
        path: options.path,
        headers: { accept: 'text/event-stream' },
        localAddress: options.from,
        agent: false,
      },
      (response) => {
        if (response.headers['content-type'] !== 'text/event-stream') {
          reject(new Error(`not an event stream: ${response.headers['content-type']}`));
          return;
        }
        let buffered = '';
        response.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const messages = buffered.split('\n\n');
          buffered = messages.pop() ?? '';
          for (const message of messages) {
            const data = /^data: (.*)$/m.exec(message)?.[1];
            if (data) events.push(JSON.parse(data) as SetupStatus);
          }
        });
        resolve({ events, close: () => request.destroy() });
      },
    );
    request.on('error', (error) => {
      if (!request.destroyed) reject(error);
    });
  });
}
