// "Copy as curl": one capture as a curl command line that repeats the request. POSIX shell
// quoting: every value in single quotes, a single quote written as '\''.
import { type CapturePayload, headerValue } from './capture-types.ts';

export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

// curl computes these itself, or they belong to one hop (RFC 9110 §7.6.1).
const SKIPPED = new Set([
  'host',
  'content-length',
  'connection',
  'proxy-connection',
  'keep-alive',
  'transfer-encoding',
  'proxy-authorization',
]);

export function toCurl(payload: CapturePayload): string {
  const method = payload.method ?? 'GET';
  const parts = ['curl'];
  if (method !== 'GET' || payload.requestBody?.text) parts.push('-X', shellQuote(method));
  parts.push(shellQuote(payload.url ?? ''));
  for (const [name, value] of payload.requestHeaders ?? []) {
    if (name.startsWith(':') || SKIPPED.has(name.toLowerCase())) continue;
    parts.push('-H', shellQuote(`${name}: ${value}`));
  }
  const body = payload.requestBody;
  if (body?.text !== undefined && body.text !== '') parts.push('--data-raw', shellQuote(body.text));
  if (headerValue(payload.requestHeaders, 'accept-encoding')) parts.push('--compressed');
  if (payload.httpVersion === 'HTTP/2' || payload.httpVersion === '2.0') parts.push('--http2');
  let command = parts.join(' ');
  if (body?.base64)
    command += `\n# the ${body.size ?? '?'}-byte binary request body is not included`;
  return command;
}
