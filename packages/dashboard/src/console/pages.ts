// The console's pages and who may see each. A page a role may not see has no link and no route
// for that role (it answers "not available"), rather than a page of errors.
import { type AccountAccess, can } from '../access-rules.ts';

export type ConsolePageId =
  | 'overview'
  | 'devices'
  | 'captures'
  | 'breakpoints'
  | 'assistant'
  | 'approvals'
  | 'access';

export type ConsolePage = {
  id: ConsolePageId;
  path: string;
  label: string;
  /** The key after `g` that jumps here (keyboard navigation). */
  shortcut: string;
  visible(access: AccountAccess): boolean;
};

export const CONSOLE_PAGES: readonly ConsolePage[] = [
  // Every account has an overview: its sections (fleet stats, status, own devices) come and go
  // with the capabilities.
  { id: 'overview', path: '/', label: 'Overview', shortcut: 'o', visible: () => true },
  {
    id: 'devices',
    path: '/devices',
    label: 'Devices',
    shortcut: 'd',
    visible: (access) => can(access, 'devices'),
  },
  {
    id: 'captures',
    path: '/captures',
    label: 'Captures',
    shortcut: 'c',
    visible: (access) => can(access, 'entries'),
  },
  {
    id: 'breakpoints',
    path: '/breakpoints',
    label: 'Breakpoints',
    shortcut: 'b',
    visible: (access) => can(access, 'entries'),
  },
  // The assistant answers from what the caller may read (docs/assistant.md), so anyone may ask.
  { id: 'assistant', path: '/assistant', label: 'Assistant', shortcut: 'a', visible: () => true },
  // The farm calls the person's AI clients wait to run (docs/farm.md "Gating"): theirs to decide
  // with farm:edit, the capability the database asks of a decision.
  {
    id: 'approvals',
    path: '/approvals',
    label: 'Approvals',
    shortcut: 'p',
    visible: (access) => can(access, 'farm', 'edit'),
  },
  // Own grants and tokens for everyone; the admin sections inside depend on capabilities.
  { id: 'access', path: '/access', label: 'Access', shortcut: 'x', visible: () => true },
];

/** The page a path belongs to: its own path, or a detail under it (`/devices/<uuid>`). */
export function pageForPath(pathname: string): ConsolePage | undefined {
  const first = `/${pathname.split('/')[1] ?? ''}`;
  // `/requests/<id>` (the assistant's links) is a capture: the Captures page's rules apply.
  const section = first === '/requests' ? '/captures' : first;
  return CONSOLE_PAGES.find((page) => page.path === section);
}
