// "Android over USB" on the Devices page: the phones on the tool server's adb, one button that
// points the chosen phone at this device's capture port (proxy setting, CA in Downloads, the
// set-up page opened) and reports whether its traffic arrives, and one that reverts it.
import type { SupabaseClient } from '@supabase/supabase-js';
import { useCallback, useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import {
  type AdbPhone,
  type AndroidConnectResult,
  AndroidSetupApiError,
  connectAndroidPhone,
  listAdbPhones,
  revertAndroidPhone,
} from './android-setup-api.ts';

type Phones =
  | { status: 'loading' }
  | { status: 'ready'; phones: AdbPhone[] }
  | { status: 'failed'; error: AndroidSetupApiError };

type Action =
  | { status: 'idle' }
  | { status: 'connecting'; serial: string }
  | { status: 'reverting'; serial: string }
  | { status: 'connected'; result: AndroidConnectResult }
  | { status: 'reverted'; serial: string }
  | { status: 'failed'; message: string };

async function sessionToken(supabase: SupabaseClient): Promise<string> {
  const { data } = await supabase.auth.getSession();
  if (!data.session) throw new AndroidSetupApiError('signed_out', 401, 'Sign in again.');
  return data.session.access_token;
}

function phoneLabel(phone: AdbPhone): string {
  const state = phone.state === 'device' ? '' : ` — ${phone.state}`;
  return `${phone.model ?? 'Android phone'} (${phone.serial})${state}`;
}

function failureMessage(error: unknown): string {
  if (!(error instanceof AndroidSetupApiError)) return 'Something went wrong; try again.';
  if (error.code === 'forbidden') return 'Your role may not set up this device.';
  return error.message;
}

export function AndroidUsbSetup(props: { device: { uuid: string; name: string } }) {
  const { supabase, config } = useAppServices();
  const [phones, setPhones] = useState<Phones>({ status: 'loading' });
  const [chosen, setChosen] = useState<string | null>(null);
  const [action, setAction] = useState<Action>({ status: 'idle' });

  const reload = useCallback(async () => {
    setPhones({ status: 'loading' });
    try {
      const list = await listAdbPhones({
        mcpUrl: config.mcpUrl,
        accessToken: await sessionToken(supabase),
      });
      setPhones({ status: 'ready', phones: list });
      const ready = list.filter((phone) => phone.state === 'device');
      setChosen((current) =>
        current && ready.some((phone) => phone.serial === current)
          ? current
          : (ready[0]?.serial ?? null),
      );
    } catch (error) {
      const failure =
        error instanceof AndroidSetupApiError
          ? error
          : new AndroidSetupApiError('failed', 0, 'Listing the phones failed.');
      setPhones({ status: 'failed', error: failure });
    }
  }, [supabase, config.mcpUrl]);

  useEffect(() => {
    void reload();
  }, [reload]);

  async function run(kind: 'connect' | 'revert') {
    if (!chosen) return;
    setAction({ status: kind === 'connect' ? 'connecting' : 'reverting', serial: chosen });
    try {
      const options = {
        mcpUrl: config.mcpUrl,
        accessToken: await sessionToken(supabase),
        deviceUuid: props.device.uuid,
        serial: chosen,
      };
      if (kind === 'connect') {
        setAction({ status: 'connected', result: await connectAndroidPhone(options) });
      } else {
        setAction({ status: 'reverted', serial: (await revertAndroidPhone(options)).serial });
      }
    } catch (error) {
      setAction({ status: 'failed', message: failureMessage(error) });
      if (error instanceof AndroidSetupApiError && error.code === 'phone_not_ready') {
        void reload();
      }
    }
  }

  if (phones.status === 'failed' && phones.error.code === 'not_configured') {
    return null;
  }
  const busy = action.status === 'connecting' || action.status === 'reverting';
  const list = phones.status === 'ready' ? phones.phones : [];
  return (
    <section
      className="panel"
      data-testid="android-usb-setup"
      aria-labelledby="android-usb-heading"
    >
      <h2 id="android-usb-heading">Android over USB</h2>
      <p className="muted">
        A phone attached to the tool server's computer by USB, with USB debugging on: one click sets
        its proxy to {props.device.name}'s port, puts the CA certificate in its Downloads and opens
        its set-up page.
      </p>
      {phones.status === 'loading' && <p className="muted">Looking for phones…</p>}
      {phones.status === 'failed' && (
        <p className="error" role="alert">
          {failureMessage(phones.error)}
        </p>
      )}
      {phones.status === 'ready' && list.length === 0 && (
        <p className="notice">No phone is attached over adb. Connect one by USB and refresh.</p>
      )}
      {list.length > 0 && (
        <div className="toolbar">
          <label>
            Phone
            <select
              value={chosen ?? ''}
              onChange={(event) => setChosen(event.target.value || null)}
              disabled={busy}
            >
              {list.map((phone) => (
                <option key={phone.serial} value={phone.serial} disabled={phone.state !== 'device'}>
                  {phoneLabel(phone)}
                </option>
              ))}
            </select>
          </label>
        </div>
      )}
      {list.some((phone) => phone.state === 'unauthorized') && (
        <p className="notice">Unlock the phone and accept "Allow USB debugging?", then refresh.</p>
      )}
      <div className="actions">
        <button type="button" disabled={busy || !chosen} onClick={() => run('connect')}>
          Point this phone at {props.device.name}
        </button>
        <button
          type="button"
          className="button--secondary"
          disabled={busy || !chosen}
          onClick={() => run('revert')}
        >
          Revert
        </button>
        <button type="button" className="button--link" disabled={busy} onClick={() => reload()}>
          Refresh
        </button>
      </div>
      <div role="status" aria-live="polite">
        {action.status === 'connecting' && (
          <p>
            Pointing {action.serial} at {props.device.name}: proxy setting, CA certificate, set-up
            page… then waiting up to 30 s for its traffic.
          </p>
        )}
        {action.status === 'reverting' && <p>Removing the proxy setting from {action.serial}…</p>}
        {action.status === 'reverted' && (
          <p className="ok">{action.serial} no longer uses a proxy.</p>
        )}
        {action.status === 'connected' && <ConnectResult result={action.result} />}
      </div>
      {action.status === 'failed' && (
        <p className="error" role="alert">
          {action.message}
        </p>
      )}
    </section>
  );
}

function ConnectResult(props: { result: AndroidConnectResult }) {
  const { result } = props;
  return (
    <div data-testid="android-usb-result">
      <p className={result.traffic.seen ? 'ok' : 'notice'}>{result.traffic.summary}</p>
      <p>
        {result.model ?? result.serial} now uses the proxy <code>{result.proxy}</code>
        {result.reverse ? ' through adb reverse (it works while the cable is in).' : '.'}
      </p>
      <p>
        For HTTPS, install the CA certificate (it is in the phone's Downloads):{' '}
        {result.ca_install_steps}.
      </p>
      <details>
        <summary>adb commands run</summary>
        <pre>{result.commands.join('\n')}</pre>
      </details>
    </div>
  );
}
