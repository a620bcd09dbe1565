// federation-broker edge function (000 §4): POST /start and POST /exchange. Wiring only.
import { readConfig } from './config.ts';
import { routeRequest } from './router.ts';
import { SecretUnsealer } from './secret-unsealing.ts';
import { SupabaseApi } from './supabase-api.ts';

const config = readConfig(Deno.env.toObject());
const deps = { config, api: new SupabaseApi(config), unsealer: new SecretUnsealer(config) };

Deno.serve((request) => routeRequest(request, deps));
