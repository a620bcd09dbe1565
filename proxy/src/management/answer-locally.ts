// A request for the proxy's own URLs (002 §4.3; docs/proxy.md "Listeners": never forwarded),
// from any listener: the device it may act as is found (its port's when admitted, or its
// address's), its set-up live check is noted, and management.ts answers. Any failure (a client
// gone mid-body, a port that cannot open, the database away) is answered 503 or the connection
// cut, never a crash.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { type ConnectionInfo, connectionInfo } from '../connection-info.ts';
import type { PortGuard } from '../devices/port-guard.ts';
import type { DeviceActivity } from '../setup/device-activity.ts';
import { SETUP_HOST, type SetupClient } from '../setup/setup-routes.ts';
import { type ManagementContext, serveManagement } from './management.ts';

export interface LocalAnswerContext {
  management: ManagementContext;
  portGuard: PortGuard | undefined;
  activity: DeviceActivity;
  /** The address a client reached when its socket does not say (the bind host). */
  bindHost: string;
  logger: Logger;
}

/**
 * `host`: the Host the request named; `proxied`: the request was sent to us as its proxy
 * (absolute-form or in a tunnel), not to our address directly.
 */
export function answerLocally(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  host: string | undefined,
  proxied: boolean,
  context: LocalAnswerContext,
): void {
  const info = connectionInfo(request.socket) as ConnectionInfo;
  admittedDevice(info, request.headers['proxy-authorization'], context.portGuard)
    // Without the database the management URLs still answer, only for no device in particular.
    .catch(() => null)
    .then((device) => {
      // A request sent to us as its proxy proves the device's proxy is set (the set-up live
      // check); one sent to our address directly (the set-up page opened by IP) does not.
      if (device && proxied) context.activity.noteRequest(device.uuid, 'http', device.via);
      const client: SetupClient = {
        ip: info.client.ip,
        reachedAddress: request.socket.localAddress ?? context.bindHost,
        device,
        fixedHost: host?.replace(/:\d+$/, '').toLowerCase() === SETUP_HOST,
        arrivedOnPort: info.listenerPort,
        proxied,
      };
      return serveManagement(request, response, path, host, client, context.management);
    })
    .catch((error: unknown) => {
      context.logger.warn({ err: error, path }, 'management request failed');
      if (response.headersSent) response.destroy();
      else {
        response.writeHead(503, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'unavailable', message: 'try again shortly' }));
      }
    });
}

/** The device a connection may act as: its port's (when admitted) or its address's. */
async function admittedDevice(
  info: ConnectionInfo,
  proxyAuthorization: string | undefined,
  portGuard: PortGuard | undefined,
): Promise<SetupClient['device']> {
  const { rule, deviceUuid } = info.attribution;
  if (!deviceUuid) return null;
  if (rule === 'ip') return { uuid: deviceUuid, via: 'shared-port' };
  if (!portGuard) return null;
  const admission = await portGuard.admit(deviceUuid, info.client.ip, proxyAuthorization);
  return admission.ok ? { uuid: deviceUuid, via: 'device-port' } : null;
}
