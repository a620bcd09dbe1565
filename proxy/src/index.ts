// The capture proxy: listener, forwarding, and the capture writer.
export type { Capture } from './capture/capture.ts';
export {
  CaptureWriter,
  type CaptureWriterOptions,
  type CaptureWriterStats,
} from './capture/capture-writer.ts';
export { type ProxyOptions, type RunningProxy, startProxy } from './proxy-server.ts';
export {
  type CertificateAuthority,
  CertificateAuthorityError,
  loadOrCreateCertificateAuthority,
} from './tls/certificate-authority.ts';
