// ask edge function (001 §4.3): POST /functions/v1/ask and /functions/v1/ask/confirm. Wiring
// only. verify_jwt is off (supabase/config.toml) so that every refused token gets the spec's
// 401 {error: 'unauthorized'}; the caller is checked by whoami() over PostgREST, revocation included.
import { readConfig } from './config.ts';
import { handleAsk } from './handler.ts';

const config = await readConfig(Deno.env.toObject());

Deno.serve((request) => handleAsk(request, { config }));
