// The route table: one page per path. New consoles add a line here (and nothing to the server,
// which answers every extension-less path with index.html).
import type { ComponentType } from 'react';
import { parseRoutePath } from './dashboard-routes.ts';
import { useLocation } from './router.ts';
import { AccessPage } from './routes/access-page.tsx';
import { ApprovalsPage } from './routes/approvals-page.tsx';
import { AssistantPage } from './routes/assistant-page.tsx';
import { BreakpointsPage } from './routes/breakpoints-page.tsx';
import { CapturesPage } from './routes/captures-page.tsx';
import { ConsentPage } from './routes/consent-page.tsx';
import { DevicesPage } from './routes/devices-page.tsx';
import { NotFoundPage } from './routes/not-found-page.tsx';
import { OverviewPage } from './routes/overview-page.tsx';
import { RequestPage } from './routes/request-page.tsx';
import { SignInPage } from './routes/sign-in-page.tsx';

const ROUTES: Record<string, ComponentType> = {
  '/': OverviewPage,
  '/devices': DevicesPage,
  '/captures': CapturesPage,
  '/breakpoints': BreakpointsPage,
  '/assistant': AssistantPage,
  '/approvals': ApprovalsPage,
  '/access': AccessPage,
  '/sign-in': SignInPage,
  '/mcp/consent': ConsentPage,
};

/** Detail paths: a device (`/devices/<uuid>`) and a capture (`/requests/<id>`, as the
 * assistant links them, docs/assistant.md), parsed as links to them are (dashboard-routes.ts). */
function detailRoute(pathname: string): ComponentType | undefined {
  const route = parseRoutePath(pathname);
  if (route?.kind === 'device') return DevicesPage;
  if (route?.kind === 'request') return RequestPage;
  return undefined;
}

export function App() {
  const { pathname } = useLocation();
  const Page = ROUTES[pathname] ?? detailRoute(pathname) ?? NotFoundPage;
  return <Page />;
}
