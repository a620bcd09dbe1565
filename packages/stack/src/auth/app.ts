// The auth service's HTTP app: GoTrue-compatible routes at the root (the gateway strips
// /auth/v1), with every failure rendered in GoTrue's error shape.
import { Hono } from 'hono';
import type { Logger } from 'pino';
import { type AuthContext, type AuthServices, createDefences } from './auth-context.ts';
import { API_VERSION_HEADER, AuthError, renderAuthError } from './auth-error.ts';
import { adminRoutes } from './routes-admin.ts';
import { emailRoutes } from './routes-email.ts';
import { signinRoutes } from './routes-signin.ts';
import { userRoutes } from './routes-user.ts';

export const AUTH_SERVICE_VERSION = 'v2.180.0-local';

export function createAuthApp(services: AuthServices, logger: Logger): Hono {
  const app = new Hono();
  const { config } = services;
  const context: AuthContext = { ...services, defences: createDefences(config) };

  // GoTrue's CORS exposes these (supabase/auth#1612), so supabase-js in a browser can read the
  // API version header and with it the error codes of the 2024-01-01 shape.
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set(
      'access-control-expose-headers',
      `X-Total-Count, Link, ${API_VERSION_HEADER}`,
    );
  });

  app.get('/health', (c) =>
    c.json({
      version: AUTH_SERVICE_VERSION,
      name: 'GoTrue',
      description: 'GoTrue is a user registration and authentication API',
    }),
  );

  app.get('/settings', (c) =>
    c.json({
      external: { anonymous_users: config.anonymousSignInsEnabled, email: true, phone: false },
      disable_signup: !config.signupEnabled,
      mailer_autoconfirm: config.autoconfirm,
      phone_autoconfirm: false,
      sms_provider: '',
      saml_enabled: false,
    }),
  );

  // Tokens are HS256 with the project secret, so there is no public key to publish.
  app.get('/.well-known/jwks.json', (c) => c.json({ keys: [] }));

  app.route('/', signinRoutes(context));
  app.route('/', emailRoutes(context));
  app.route('/', userRoutes(context));
  app.route('/', adminRoutes(context));

  app.notFound(() => renderAuthError(new AuthError(404, 'not_found', 'Not Found'), undefined));

  app.onError((error, c) => {
    const version = c.req.header(API_VERSION_HEADER);
    if (error instanceof AuthError) return renderAuthError(error, version);
    logger.error({ err: error, path: c.req.path }, 'unexpected failure');
    return renderAuthError(
      new AuthError(
        500,
        'unexpected_failure',
        'Unexpected failure, please check server logs for more information',
      ),
      version,
    );
  });

  return app;
}
