// Every tool of the tool server, in the order tools/list presents them (a stable, deterministic
// order, as the 2026-07-28 conformance scenarios expect). Farm tools follow (listed only where a farm is configured).

import {
  androidInstallApp,
  androidListPackages,
  androidUninstallApp,
} from '../farm-tools/android-apps.ts';
import { browserCdp } from '../farm-tools/browser-cdp.ts';
import { farmRunShell } from '../farm-tools/farm-run-shell.ts';
import type { ToolDefinition } from './tool-definition.ts';
import { listBreakpoints, resumeBreakpoint } from './tools/breakpoints.ts';
import { getStats, getStatus } from './tools/feed-snapshots.ts';
import { inspectRequests } from './tools/inspect-requests.ts';
import { listDevices } from './tools/list-devices.ts';
import { summarizeDeviceTraffic } from './tools/summarize-device-traffic.ts';
import { listTags, listWorkspaces } from './tools/workspaces-and-tags.ts';

export const TOOL_CATALOG: readonly ToolDefinition[] = [
  listDevices,
  summarizeDeviceTraffic,
  inspectRequests,
  getStats,
  getStatus,
  listBreakpoints,
  resumeBreakpoint,
  listWorkspaces,
  listTags,
  farmRunShell,
  browserCdp,
  androidInstallApp,
  androidListPackages,
  androidUninstallApp,
];
