// whoami edge function (001 §5.4): the caller resolved to user, roles and capabilities. Wiring
// only; verify_jwt stays on, and the revocation check is whoami()'s over PostgREST.
import { readConfig } from './config.ts';
import { handleWhoami } from './handler.ts';

const config = readConfig(Deno.env.toObject());

Deno.serve((request) => handleWhoami(request, config));
