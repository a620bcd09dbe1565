// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) from capture rows: one entry per
// request/response pair, in capture order. Fields the proxy does not record are given their
// "unknown" values (-1 sizes and timings, empty cookies), never invented.
import {
  type CaptureBody,
  type CaptureRow,
  type HeaderPair,
  headerValue,
} from './capture-types.ts';

type HarHeader = { name: string; value: string };

function headers(pairs: HeaderPair[] | undefined): HarHeader[] {
  return (pairs ?? []).map(([name, value]) => ({ name, value }));
}

function queryString(url: string): HarHeader[] {
  try {
    return [...new URL(url).searchParams].map(([name, value]) => ({ name, value }));
  } catch {
    return [];
  }
}

function bodySize(body: CaptureBody, fallback: number | undefined): number {
  if (body && typeof body.size === 'number') return body.size;
  return typeof fallback === 'number' ? fallback : -1;
}

/** HAR timings are ms, -1 when not applicable; send/wait/receive must be numbers >= 0. */
function timings(row: CaptureRow) {
  const t = row.payload.timings ?? {};
  const known = (value: number | undefined) =>
    typeof value === 'number' && value >= 0 ? value : -1;
  const required = (value: number | undefined) =>
    typeof value === 'number' && value >= 0 ? value : 0;
  const ssl = known(t.tls);
  const connect = known(t.connect);
  return {
    blocked: -1,
    dns: -1,
    // HAR's connect includes the TLS handshake.
    connect: connect >= 0 && ssl >= 0 ? connect + ssl : connect,
    ssl,
    send: required(t.send),
    wait: required(t.wait),
    receive: required(t.receive),
  };
}

function content(body: CaptureBody, mimeType: string) {
  if (!body) return { size: 0, mimeType };
  const size = typeof body.decodedSize === 'number' ? body.decodedSize : (body.size ?? 0);
  if (body.base64 !== undefined) return { size, mimeType, text: body.base64, encoding: 'base64' };
  return { size, mimeType, text: body.text ?? '' };
}

export function toHarEntry(row: CaptureRow) {
  const p = row.payload;
  const url = p.url ?? '';
  const httpVersion = p.httpVersion ?? 'HTTP/1.1';
  const time = timings(row);
  const total = p.timings?.total;
  const requestType =
    headerValue(p.requestHeaders, 'content-type') ?? p.requestBody?.contentType ?? '';
  const responseType =
    headerValue(p.responseHeaders, 'content-type') ??
    p.responseBody?.contentType ??
    'application/octet-stream';
  const requestText = p.requestBody?.text ?? p.requestBody?.base64;
  return {
    startedDateTime: new Date(row.ts).toISOString(),
    time:
      typeof total === 'number' && total >= 0
        ? total
        : Math.max(0, time.connect) + Math.max(0, time.ssl) + time.send + time.wait + time.receive,
    request: {
      method: p.method ?? 'GET',
      url,
      httpVersion,
      cookies: [],
      headers: headers(p.requestHeaders),
      queryString: queryString(url),
      ...(requestText !== undefined && requestText !== ''
        ? { postData: { mimeType: requestType, text: requestText } }
        : {}),
      headersSize: -1,
      bodySize: bodySize(p.requestBody ?? null, p.sizes?.requestBody),
    },
    response: {
      status: p.statusCode ?? 0,
      statusText: p.statusText ?? '',
      httpVersion,
      cookies: [],
      headers: headers(p.responseHeaders),
      content: content(p.responseBody ?? null, responseType),
      redirectURL: headerValue(p.responseHeaders, 'location') ?? '',
      headersSize: -1,
      bodySize: bodySize(p.responseBody ?? null, p.sizes?.responseBody),
    },
    cache: {},
    timings: time,
    ...(p.client?.port ? { connection: String(p.client.port) } : {}),
    comment: `capture ${row.id} (${row.kind})${row.device_uuid ? ` device ${row.device_uuid}` : ''}`,
  };
}

export function toHar(rows: CaptureRow[], creatorVersion = '1.0') {
  const ordered = [...rows].sort((a, b) => a.id - b.id);
  return {
    log: {
      version: '1.2',
      creator: { name: 'Capture dashboard', version: creatorVersion },
      pages: [],
      entries: ordered.map(toHarEntry),
    },
  };
}
