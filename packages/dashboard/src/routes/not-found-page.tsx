// Any path the app has no route for.
import { PageFrame } from '../components/page-frame.tsx';

export function NotFoundPage() {
  return (
    <PageFrame>
      <h1>Page not found</h1>
      <p>
        <a href="/">Go to the dashboard</a>
      </p>
    </PageFrame>
  );
}
