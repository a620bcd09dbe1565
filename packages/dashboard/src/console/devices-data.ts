// The caller's devices (RLS scope: own, or every device for admins) with their ports: REST once,
// then Realtime on `devices` (and `device_status`) so names, last-seen times and new devices
// arrive without polling. Online-ness is derived here from `last_seen_at` with the data model's
// one window (150 s, docs/data-model.md), ticking with the clock, so a device goes offline on
// screen when it stops being seen even though no row changes.
import { useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { subscribeTable } from './live.ts';

export type DeviceRow = {
  uuid: string;
  name: string;
  os: string;
  model: string | null;
  country: string | null;
  owner_user_id: string;
  last_seen_at: string | null;
  created_at: string;
  device_status: { source: string | null; ip: string | null } | null;
  device_ports: { port: number } | null;
};

/** The shortest gap between two reads caused by changes. */
const REREAD_MS = 1000;

const SELECT =
  'uuid,name,os,model,country,owner_user_id,last_seen_at,created_at,device_status(source,ip),device_ports(port)';

export type DevicesState = {
  devices: DeviceRow[];
  loaded: boolean;
  error: string | null;
};

export function useDevices(): DevicesState {
  const { supabase } = useAppServices();
  const [devices, setDevices] = useState<DeviceRow[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let current = true;
    // The embeds (status, port) are read again on a change, since Realtime sends the one table.
    const read = () =>
      supabase
        .from('devices')
        .select(SELECT)
        .order('created_at', { ascending: true })
        .then(({ data, error: readError }) => {
          if (!current) return;
          if (readError) setError(readError.message);
          else {
            setError(null);
            setDevices((data ?? []) as unknown as DeviceRow[]);
          }
          setLoaded(true);
        });
    // Every capture batch moves its devices' last_seen_at, so under traffic changes arrive many
    // times a second: the first change reads at once, later ones at most once a second.
    let lastRead = 0;
    let timer = 0;
    const changed = () => {
      if (timer) return;
      const wait = Math.max(0, lastRead + REREAD_MS - Date.now());
      timer = window.setTimeout(() => {
        timer = 0;
        lastRead = Date.now();
        void read();
      }, wait);
    };
    const offDevices = subscribeTable(
      supabase,
      { topic: 'devices', table: 'devices' },
      changed,
      () => {},
    );
    const offStatus = subscribeTable(
      supabase,
      { topic: 'device-status', table: 'device_status' },
      changed,
      () => {},
    );
    void read();
    return () => {
      current = false;
      window.clearTimeout(timer);
      offDevices();
      offStatus();
    };
  }, [supabase]);

  return { devices, loaded, error };
}
