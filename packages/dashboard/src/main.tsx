// Entry point: read /config.json, make the one supabase-js client, render the app. A deployment
// that cannot serve its config gets a plain message instead of a blank page.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.tsx';
import { AppServicesProvider } from './app-context.tsx';
import { parseRuntimeConfig } from './runtime-config.ts';
import { SessionProvider } from './session.tsx';
import { createDashboardClient } from './supabase-client.ts';
import { applyInitialTheme } from './theme.ts';
import './styles.css';

async function loadRuntimeConfig() {
  const response = await fetch('/config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`/config.json answered ${response.status}`);
  return parseRuntimeConfig(await response.json());
}

async function startDashboard(container: HTMLElement) {
  const root = createRoot(container);
  try {
    const config = await loadRuntimeConfig();
    const services = { config, supabase: createDashboardClient(config) };
    root.render(
      <StrictMode>
        <AppServicesProvider services={services}>
          <SessionProvider>
            <App />
          </SessionProvider>
        </AppServicesProvider>
      </StrictMode>,
    );
  } catch (error) {
    console.error('dashboard_config_failed', error);
    root.render(
      <p className="fatal" role="alert">
        The dashboard is not configured correctly. Please try again later.
      </p>,
    );
  }
}

applyInitialTheme();
const container = document.getElementById('root');
if (container) void startDashboard(container);
