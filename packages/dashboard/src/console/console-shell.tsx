// The frame of every console page: skip link, navigation (only the pages this role may see),
// account with role badge, theme switch and sign-out, then the page. Keyboard: Tab order follows
// the layout, `g` then a page's key jumps to it, `?` lists the keys.
import { type MouseEvent, type ReactNode, useEffect, useState } from 'react';
import { AccessProvider, useAccessState } from '../access.tsx';
import type { AccountAccess } from '../access-rules.ts';
import { useAppServices } from '../app-context.tsx';
import { LoadingCard } from '../components/page-frame.tsx';
import { RoleBadge } from '../components/role-badge.tsx';
import { useSignInRedirect } from '../components/use-sign-in-redirect.ts';
import { HOME_PATH, signInPath } from '../next-path.ts';
import { navigate, useLocation } from '../router.ts';
import { useTheme } from '../theme.ts';
import { CONSOLE_PAGES, type ConsolePage, pageForPath } from './pages.ts';

/** Follows a same-origin link through the router unless a modifier asks for a new tab. */
export function followLink(event: MouseEvent<HTMLAnchorElement>, path: string) {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return;
  event.preventDefault();
  navigate(path);
}

function isTyping(target: EventTarget | null): boolean {
  const element = target as HTMLElement | null;
  return (
    !!element && (element.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(element.tagName))
  );
}

/** When `g` was pressed: kept outside React so a re-render between the two keys loses nothing. */
let armedAt = 0;

function useGoToShortcuts(pages: readonly ConsolePage[], onHelp: () => void) {
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.metaKey || event.ctrlKey || event.altKey || isTyping(event.target)) return;
      if (event.key === '?') {
        onHelp();
        return;
      }
      if (event.key === 'g') {
        armedAt = Date.now();
        return;
      }
      if (Date.now() - armedAt > 1500) return;
      armedAt = 0;
      const page = pages.find((candidate) => candidate.shortcut === event.key);
      if (page) {
        event.preventDefault();
        navigate(page.path);
        document.getElementById('console-main')?.focus();
      }
    }
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [pages, onHelp]);
}

function ConsoleNav(props: { pages: readonly ConsolePage[]; current: string }) {
  return (
    <nav className="console-nav" aria-label="Console">
      <ul>
        {props.pages.map((page) => (
          <li key={page.id}>
            <a
              href={page.path}
              data-testid={`nav-${page.id}`}
              aria-current={pageForPath(props.current)?.id === page.id ? 'page' : undefined}
              onClick={(event) => followLink(event, page.path)}
            >
              {page.label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function ShortcutHelp(props: { pages: readonly ConsolePage[]; onClose: () => void }) {
  return (
    <section className="shortcut-help" aria-label="Keyboard shortcuts" data-testid="shortcut-help">
      <h2>Keyboard</h2>
      <ul>
        {props.pages.map((page) => (
          <li key={page.id}>
            <kbd>g</kbd> <kbd>{page.shortcut}</kbd> {page.label}
          </li>
        ))}
        <li>
          <kbd>/</kbd> search captures · <kbd>j</kbd>/<kbd>k</kbd> next/previous capture
        </li>
      </ul>
      <button type="button" className="button--secondary" onClick={props.onClose}>
        Close
      </button>
    </section>
  );
}

function ShellFrame(props: {
  access: AccountAccess;
  page: ConsolePage | undefined;
  children: ReactNode;
}) {
  const { supabase } = useAppServices();
  const { pathname } = useLocation();
  const [theme, toggleTheme] = useTheme();
  const [helpOpen, setHelpOpen] = useState(false);
  const pages = CONSOLE_PAGES.filter((page) => page.visible(props.access));
  useGoToShortcuts(pages, () => setHelpOpen((open) => !open));
  const role =
    props.access.roles.find((candidate) => candidate.is_admin) ?? props.access.roles[0] ?? null;

  async function signOut() {
    // This browser's session only; the person's other devices and OAuth grants stay signed in.
    await supabase.auth.signOut({ scope: 'local' });
    navigate(signInPath(HOME_PATH), { replace: true, notice: 'signed_out' });
  }

  return (
    <div className="console">
      <a className="skip-link" href="#console-main">
        Skip to content
      </a>
      <header className="console-header">
        <span className="console-brand">Capture</span>
        <ConsoleNav pages={pages} current={pathname} />
        <div className="console-account">
          <span data-testid="account-email" className="console-email">
            {props.access.email}
          </span>
          {role && <RoleBadge role={role} />}
          <button
            type="button"
            className="button--secondary button--small"
            aria-pressed={theme === 'dark'}
            data-testid="theme-toggle"
            onClick={toggleTheme}
          >
            {theme === 'dark' ? 'Light theme' : 'Dark theme'}
          </button>
          <button type="button" className="button--secondary button--small" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      {helpOpen && <ShortcutHelp pages={pages} onClose={() => setHelpOpen(false)} />}
      <main id="console-main" className="console-main" tabIndex={-1}>
        {props.page?.visible(props.access) ? (
          props.children
        ) : (
          <section data-testid="page-unavailable">
            <h1>Not available</h1>
            <p>Your role does not include this page.</p>
          </section>
        )}
      </main>
    </div>
  );
}

/** A console page: signed in (else to sign-in and back), whoami read, then the frame. */
export function ConsoleShell(props: { children: ReactNode }) {
  const { pathname } = useLocation();
  const page = pageForPath(pathname);
  // Sign-in may return only to validated paths (next-path.ts): console pages come back to `/`.
  const session = useSignInRedirect(HOME_PATH);
  const userId = session.status === 'signed-in' ? session.session.user.id : undefined;
  const access = useAccessState(userId);
  if (!userId || access.status === 'loading') return <LoadingCard label="Loading…" />;
  if (access.status === 'failed') {
    return (
      <p className="fatal" role="alert">
        Could not read your account: {access.message}
      </p>
    );
  }
  return (
    <AccessProvider access={access.access}>
      <ShellFrame access={access.access} page={page}>
        {props.children}
      </ShellFrame>
    </AccessProvider>
  );
}
