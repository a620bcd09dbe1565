// The storage service's HTTP app: storage-api's routes at the root (the gateway strips
// /storage/v1), every failure rendered in storage-api's error shape, unknown routes as its 404.
import { Hono } from 'hono';
import type { Logger } from 'pino';
import { bucketRoutes } from './routes-bucket.ts';
import { objectRoutes } from './routes-object.ts';
import type { StorageContext } from './storage-context.ts';
import { renderStorageError, StorageError, storageErrors } from './storage-error.ts';

export function createStorageApp(context: StorageContext, logger: Logger): Hono {
  const app = new Hono();

  app.get('/status', (c) => c.body(null, 200));
  app.route('/', bucketRoutes(context));
  app.route('/', objectRoutes(context));

  app.notFound((c) => {
    const body = {
      statusCode: '404',
      error: 'Not Found',
      message: `Route ${c.req.method}:${new URL(c.req.url).pathname} not found`,
      code: 'InvalidRequest',
    };
    return c.json(body, 404);
  });

  app.onError((error) => {
    if (error instanceof StorageError) {
      if (error.statusCode >= 500) logger.error({ err: error.cause ?? error }, error.message);
      return renderStorageError(error);
    }
    logger.error({ err: error }, 'unexpected failure');
    return renderStorageError(storageErrors.internal(error));
  });

  return app;
}
