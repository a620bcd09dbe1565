// Maps request paths onto files of the built dist/ without ever leaving it, and says how each
// file is typed and cached.
import { extname, join, resolve, sep } from 'node:path';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

export function contentTypeFor(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

/** Vite names what it emits under assets/ by content hash, so those never change. */
export function cacheControlFor(relativePath: string): string {
  if (relativePath.startsWith('assets/')) return 'public, max-age=31536000, immutable';
  if (relativePath === 'index.html') return 'no-store';
  return 'no-cache';
}

export type ResolvedPath =
  | { kind: 'refused' }
  | { kind: 'file'; relativePath: string; absolutePath: string };

/**
 * The dist file a path names, or `refused` for anything that could step outside dist/: a `.`
 * or `..` segment (raw or percent-encoded), a backslash, NUL, or bad percent-encoding. Browsers
 * never send such paths, so refusing them costs nothing.
 */
export function resolveDistPath(distDir: string, pathname: string): ResolvedPath {
  if (!pathname.startsWith('/')) return { kind: 'refused' };
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return { kind: 'refused' };
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return { kind: 'refused' };
  const segments = decoded.split('/');
  if (segments.some((segment) => segment === '.' || segment === '..')) return { kind: 'refused' };
  // Empty segments (`//`) are dropped, so a path never starts with `/` below the root.
  const relativePath = segments.filter((segment) => segment !== '').join('/');
  const root = resolve(distDir);
  const absolutePath = resolve(join(root, relativePath));
  // The second lock: whatever the checks above missed still cannot name a file outside dist/.
  if (absolutePath !== root && !absolutePath.startsWith(root + sep)) return { kind: 'refused' };
  return { kind: 'file', relativePath, absolutePath };
}

/** Paths the app routes itself (no file extension, not under assets/): answered by index.html. */
export function isAppRoute(relativePath: string): boolean {
  return relativePath.split('/')[0] !== 'assets' && extname(relativePath) === '';
}
