// A breakpoint's modified_message applied to the held message (proxy/src/breakpoints/
// modified-message.ts): headers replaced, the body's framing recomputed, and what the edit may
// not carry refused with a message the dashboard shows.
import { describe, expect, it } from 'vitest';
import { applyEdit, ModifiedMessageError } from '../src/breakpoints/modified-message.ts';

const HELD = {
  rawHeaders: ['host', 'origin.test', 'content-type', 'text/plain', 'content-length', '5'],
  body: Buffer.from('hello'),
};

describe('an edit of a held message', () => {
  it('replaces the headers and gives a new body its own Content-Length', () => {
    const edited = applyEdit(HELD, { headers: [['x-edited', 'yes']], body: 'hi' });
    expect(edited.rawHeaders).toEqual(['x-edited', 'yes', 'content-length', '2']);
    expect(edited.body.toString()).toBe('hi');
  });

  it('leaves out HTTP/2 pseudo-headers copied from the capture instead of failing', () => {
    // Regression: a request held from an HTTP/2 client (gRPC) is captured with :method, :path,
    // :authority and :scheme; an edit carrying them answered the client 502.
    const edited = applyEdit(HELD, {
      headers: [
        [':method', 'POST'],
        [':path', '/svc/Call'],
        [':authority', 'origin.test'],
        [':scheme', 'https'],
        ['content-type', 'application/grpc'],
      ],
    });
    expect(edited.rawHeaders).toEqual(['content-type', 'application/grpc', 'content-length', '5']);
  });

  it.each([
    [[['bad name', 'x']], /not a header name/],
    [[['x-ok', 'line\r\nbreak']], /single-line/],
    [[[':no spaces', 'x']], /not a header name/],
  ])('refuses headers %j', (headers, message) => {
    expect(() => applyEdit(HELD, { headers })).toThrow(ModifiedMessageError);
    expect(() => applyEdit(HELD, { headers })).toThrow(message);
  });
});
