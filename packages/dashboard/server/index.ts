// Public surface of @capture/dashboard: the server that serves the built app.
export type { DashboardRuntimeConfig } from '../src/runtime-config.ts';
export {
  DASHBOARD_DIST_DIR,
  type DashboardServerOptions,
  type RunningDashboardServer,
  startDashboardServer,
} from './dashboard-server.ts';
export { DashboardServerError, type DashboardServerErrorCode } from './errors.ts';
export { buildContentSecurityPolicy } from './security-headers.ts';
