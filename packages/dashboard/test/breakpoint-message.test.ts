// The Modify editor's starting point: a held message as the proxy captures it, turned into the
// keys the database accepts in modified_message (request: method, url, headers, body; response:
// status, headers, body). Regression: the editor was pre-filled with the captured message itself,
// which the database refuses (scheme, host, requestHeaders, …).
import { describe, expect, it } from 'vitest';
import { editableMessage, MODIFIABLE_KEYS } from '../src/console/breakpoint-message.ts';

// proxy/src/http/forward-held.ts: the request phase's message.
const HELD_REQUEST = {
  method: 'POST',
  scheme: 'http',
  host: '127.0.0.1',
  port: 8080,
  path: '/bp-1',
  query: 'a=1',
  url: 'http://127.0.0.1:8080/bp-1?a=1',
  httpVersion: 'HTTP/1.1',
  requestHeaders: [
    ['Host', '127.0.0.1:8080'],
    ['Content-Type', 'application/json'],
    ['Content-Length', '11'],
    ['Proxy-Authorization', 'Basic [redacted]'],
  ],
  requestBody: {
    text: '{"a":true}\n',
    encoding: 'utf8',
    size: 11,
    truncated: false,
    contentType: 'application/json',
  },
};

describe('the Modify editor of a held breakpoint', () => {
  it('offers a held request with only method, url, headers and body', () => {
    const draft = editableMessage({
      phase: 'request',
      method: 'POST',
      url: HELD_REQUEST.url,
      message: HELD_REQUEST,
    });
    expect(Object.keys(draft).every((key) => MODIFIABLE_KEYS.request.includes(key))).toBe(true);
    expect(draft).toEqual({
      method: 'POST',
      url: 'http://127.0.0.1:8080/bp-1?a=1',
      // Content-Length follows the body the proxy sends; the redacted credential is not sent on.
      headers: [
        ['Host', '127.0.0.1:8080'],
        ['Content-Type', 'application/json'],
      ],
      body: '{"a":true}\n',
    });
  });

  it('leaves out the pseudo-headers of a request held from an HTTP/2 client', () => {
    // Regression: :method, :path, :authority and :scheme went into the draft, and the proxy
    // answered the held client 502 breakpoint_modify_invalid when it was sent unchanged.
    const draft = editableMessage({
      phase: 'request',
      method: 'POST',
      url: HELD_REQUEST.url,
      message: {
        ...HELD_REQUEST,
        httpVersion: 'HTTP/2',
        requestHeaders: [
          [':method', 'POST'],
          [':path', '/bp-1?a=1'],
          [':authority', '127.0.0.1:8080'],
          [':scheme', 'http'],
          ['content-type', 'application/grpc'],
        ],
      },
    });
    expect(draft.headers).toEqual([['content-type', 'application/grpc']]);
  });

  it('offers a held response with only status, headers and body', () => {
    const draft = editableMessage({
      phase: 'response',
      method: 'GET',
      url: 'http://127.0.0.1:8080/x',
      message: {
        method: 'GET',
        url: 'http://127.0.0.1:8080/x',
        host: '127.0.0.1',
        requestHeaders: [['Host', '127.0.0.1:8080']],
        statusCode: 503,
        statusText: 'Service Unavailable',
        responseHeaders: [['content-type', 'text/plain']],
        responseBody: { text: 'down', encoding: 'utf8', size: 4, truncated: false },
      },
    });
    expect(draft).toEqual({
      status: 503,
      headers: [['content-type', 'text/plain']],
      body: 'down',
    });
  });

  it.each([
    ['binary', { base64: 'AAE=', encoding: 'base64', size: 2, truncated: false }],
    ['cut at the capture cap', { text: 'abc', encoding: 'utf8', size: 9000, truncated: true }],
    [
      'decoded from gzip',
      { text: 'abc', encoding: 'utf8', size: 20, contentEncoding: 'gzip', decoded: true },
    ],
    ['empty', null],
  ])('leaves out a body it cannot show as held (%s): the proxy keeps the held bytes', (_, body) => {
    const draft = editableMessage({
      phase: 'request',
      method: 'POST',
      url: HELD_REQUEST.url,
      message: { ...HELD_REQUEST, requestBody: body },
    });
    expect(draft).not.toHaveProperty('body');
  });

  it('falls back to the row for a message without the captured fields', () => {
    expect(
      editableMessage({
        phase: 'request',
        method: 'POST',
        url: 'https://api.example.test/x',
        message: { body: 'x' },
      }),
    ).toEqual({ method: 'POST', url: 'https://api.example.test/x' });
  });
});
