// A tiny history router: the current URL as React state and navigate() over the History API.
// Enough for a handful of routes; routes themselves are a table in app.tsx.
import { useSyncExternalStore } from 'react';

const CHANGE_EVENT = 'dashboard:navigate';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange);
  window.addEventListener(CHANGE_EVENT, onChange);
  return () => {
    window.removeEventListener('popstate', onChange);
    window.removeEventListener(CHANGE_EVENT, onChange);
  };
}

/** Notice a page hands to the next one through history state, so the URL stays untouched. */
export type NavigationNotice = 'session_rejected' | 'signed_out';

export type DashboardLocation = {
  pathname: string;
  search: string;
  href: string;
  notice: NavigationNotice | null;
};

function readNotice(): NavigationNotice | null {
  const state = window.history.state as { notice?: unknown } | null;
  const notice = state?.notice;
  return notice === 'session_rejected' || notice === 'signed_out' ? notice : null;
}

let cached: DashboardLocation | null = null;

/** One object per distinct (URL, notice), as useSyncExternalStore needs a stable snapshot. */
function readLocation(): DashboardLocation {
  const href = window.location.href;
  const notice = readNotice();
  if (cached?.href !== href || cached.notice !== notice) {
    const url = new URL(href);
    cached = { pathname: url.pathname, search: url.search, href, notice };
  }
  return cached;
}

/** The current location; re-renders on navigate() and on back/forward. */
export function useLocation(): DashboardLocation {
  return useSyncExternalStore(subscribe, readLocation);
}

/** Goes to a same-origin path; `replace` for redirects, so Back does not bounce. */
export function navigate(
  path: string,
  options: { replace?: boolean; notice?: NavigationNotice } = {},
): void {
  const target = new URL(path, window.location.origin);
  // Only paths of this origin: callers pass validated paths, this is the second lock.
  if (target.origin !== window.location.origin) throw new Error('navigate() is same-origin only');
  const state = options.notice ? { notice: options.notice } : null;
  if (target.href === window.location.href && !options.notice) return;
  if (options.replace) window.history.replaceState(state, '', target.href);
  else window.history.pushState(state, '', target.href);
  window.dispatchEvent(new Event(CHANGE_EVENT));
}
