// The frame every page sits in: the product name and one centred card.
import type { ReactNode } from 'react';

export function PageFrame(props: { children: ReactNode; wide?: boolean }) {
  return (
    <div className="frame">
      <header className="frame__header">Capture</header>
      <main className={props.wide ? 'card card--wide' : 'card'}>{props.children}</main>
    </div>
  );
}

export function LoadingCard(props: { label: string }) {
  return (
    <PageFrame>
      <p className="muted" aria-busy="true">
        {props.label}
      </p>
    </PageFrame>
  );
}
