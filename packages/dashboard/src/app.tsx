// The route table: one page per path. New consoles add a line here (and nothing to the server,
// which answers every extension-less path with index.html).
import type { ComponentType } from 'react';
import { useLocation } from './router.ts';
import { ConsentPage } from './routes/consent-page.tsx';
import { HomePage } from './routes/home-page.tsx';
import { NotFoundPage } from './routes/not-found-page.tsx';
import { SignInPage } from './routes/sign-in-page.tsx';

const ROUTES: Record<string, ComponentType> = {
  '/': HomePage,
  '/sign-in': SignInPage,
  '/mcp/consent': ConsentPage,
};

export function App() {
  const { pathname } = useLocation();
  const Page = ROUTES[pathname] ?? NotFoundPage;
  return <Page />;
}
