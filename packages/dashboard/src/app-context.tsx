// What every page needs from the deployment: its runtime config and the one supabase-js client.
import type { SupabaseClient } from '@supabase/supabase-js';
import { createContext, type ReactNode, useContext } from 'react';
import type { DashboardRuntimeConfig } from './runtime-config.ts';

export type AppServices = { config: DashboardRuntimeConfig; supabase: SupabaseClient };

const AppContext = createContext<AppServices | null>(null);

export function AppServicesProvider(props: { services: AppServices; children: ReactNode }) {
  return <AppContext value={props.services}>{props.children}</AppContext>;
}

export function useAppServices(): AppServices {
  const services = useContext(AppContext);
  if (!services) throw new Error('useAppServices() outside AppServicesProvider');
  return services;
}
