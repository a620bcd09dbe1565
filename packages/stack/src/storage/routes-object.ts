// The /object/* routes, matched on raw path segments in storage-api's order: the fixed prefixes
// (public, sign, info, authenticated, list, move, copy, upload/sign) before the generic
// `/object/:bucket/*`. Object names hold slashes, so they are split off here rather than by a
// path pattern; a bucket named like a prefix is shadowed on hosted Supabase too.
import type { Context } from 'hono';
import { Hono } from 'hono';
import { downloadObject, listObjects, objectInfoRoute } from './routes-object-read.ts';
import { copyObject, moveObject } from './routes-object-relocate.ts';
import { deleteObject, removeObjects, uploadRoute } from './routes-object-write.ts';
import {
  downloadSignedObject,
  signObjectUrl,
  signObjectUrls,
  signUploadUrl,
  uploadToSignedUrl,
} from './routes-signed.ts';
import type { StorageContext } from './storage-context.ts';

type Handler = (c: Context, context: StorageContext, rest: string[]) => Promise<Response>;

interface ObjectRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  prefix: string[];
  /** How many segments must follow the prefix: exactly this, or at least `min`. */
  rest: { exactly: number } | { min: number };
  handle: Handler;
}

/** `<bucket>/<name…>` follows: two segments at least. */
const OBJECT = { min: 2 };

const ROUTES: ObjectRoute[] = [
  {
    method: 'GET',
    prefix: ['public'],
    rest: OBJECT,
    handle: (c, context, rest) => downloadObject(c, context, rest, 'public'),
  },
  { method: 'GET', prefix: ['sign'], rest: OBJECT, handle: downloadSignedObject },
  {
    method: 'GET',
    prefix: ['info', 'public'],
    rest: OBJECT,
    handle: (c, context, rest) => objectInfoRoute(c, context, rest, 'public'),
  },
  {
    method: 'GET',
    prefix: ['info', 'authenticated'],
    rest: OBJECT,
    handle: (c, context, rest) => objectInfoRoute(c, context, rest, 'authenticated'),
  },
  {
    method: 'GET',
    prefix: ['info'],
    rest: OBJECT,
    handle: (c, context, rest) => objectInfoRoute(c, context, rest, 'anyone'),
  },
  {
    method: 'GET',
    prefix: ['authenticated'],
    rest: OBJECT,
    handle: (c, context, rest) => downloadObject(c, context, rest, 'authenticated'),
  },
  {
    method: 'GET',
    prefix: [],
    rest: OBJECT,
    handle: (c, context, rest) => downloadObject(c, context, rest, 'anyone'),
  },
  { method: 'POST', prefix: ['list'], rest: { exactly: 1 }, handle: listObjects },
  {
    method: 'POST',
    prefix: ['move'],
    rest: { exactly: 0 },
    handle: (c, context) => moveObject(c, context),
  },
  {
    method: 'POST',
    prefix: ['copy'],
    rest: { exactly: 0 },
    handle: (c, context) => copyObject(c, context),
  },
  { method: 'POST', prefix: ['sign'], rest: { exactly: 1 }, handle: signObjectUrls },
  { method: 'POST', prefix: ['sign'], rest: OBJECT, handle: signObjectUrl },
  { method: 'POST', prefix: ['upload', 'sign'], rest: OBJECT, handle: signUploadUrl },
  {
    method: 'POST',
    prefix: [],
    rest: OBJECT,
    handle: (c, context, rest) => uploadRoute(c, context, rest, 'create'),
  },
  { method: 'PUT', prefix: ['upload', 'sign'], rest: OBJECT, handle: uploadToSignedUrl },
  {
    method: 'PUT',
    prefix: [],
    rest: OBJECT,
    handle: (c, context, rest) => uploadRoute(c, context, rest, 'update'),
  },
  { method: 'DELETE', prefix: [], rest: { exactly: 1 }, handle: removeObjects },
  { method: 'DELETE', prefix: [], rest: OBJECT, handle: deleteObject },
];

function matches(route: ObjectRoute, method: string, segments: string[]): boolean {
  if (route.method !== method) return false;
  if (route.prefix.some((part, index) => segments[index] !== part)) return false;
  const rest = segments.length - route.prefix.length;
  return 'exactly' in route.rest ? rest === route.rest.exactly : rest >= route.rest.min;
}

/** The path after `/object/` in raw segments; `[]` for `/object` itself. */
function segmentsOf(c: Context): string[] {
  const tail = new URL(c.req.url).pathname.replace(/^\/object\/?/, '');
  return tail === '' ? [] : tail.split('/');
}

export function objectRoutes(context: StorageContext): Hono {
  const app = new Hono();
  app.all('/object/*', async (c, next) => {
    // Hono dispatches HEAD as GET and drops the body; the handlers see the method as HEAD.
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    const segments = segmentsOf(c);
    const route = ROUTES.find((candidate) => matches(candidate, method, segments));
    if (!route) return next();
    return route.handle(c, context, segments.slice(route.prefix.length));
  });
  return app;
}
