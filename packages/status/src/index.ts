// The status service and the feed snapshot schemas.
export { HostSampler } from './host-metrics.ts';
export { type ComponentProbe, type ProbeResult, runProbe } from './probes.ts';
export {
  ComponentStatus,
  StatsSnapshot,
  StatusSnapshot,
} from './snapshot-schemas.ts';
export {
  type ComponentDefinition,
  localStackComponents,
  type RunningStatusService,
  rollUpOverall,
  type StatusServiceOptions,
  startStatusService,
} from './status-service.ts';
