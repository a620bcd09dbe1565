// The capture proxy: listeners, forwarding and interception, devices, and the capture writer.
export type { Capture } from './capture/capture.ts';
export {
  CaptureWriter,
  type CaptureWriterOptions,
  type CaptureWriterStats,
} from './capture/capture-writer.ts';
export type { AttributionRule, ConnectionInfo } from './connection-info.ts';
export {
  configFromEnvironment,
  type DaemonConfig,
  type RunningDaemon,
  startProxyDaemon,
} from './daemon.ts';
export { DestinationPolicy } from './destination-policy.ts';
export { DeviceRegistry, type PortRange } from './devices/device-registry.ts';
export { PAC_CONTENT_TYPE, pacBody } from './devices/pac.ts';
export type { DeviceOptions, ProxyOptions, RunningProxy } from './proxy-options.ts';
export { startProxy } from './proxy-server.ts';
export {
  type CertificateAuthority,
  CertificateAuthorityError,
  loadOrCreateCertificateAuthority,
} from './tls/certificate-authority.ts';
export { LeafCertificateCache } from './tls/leaf-certificates.ts';
