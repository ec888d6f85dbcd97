import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { GroupPage } from './pages/group.js';
import { GroupsPage } from './pages/groups.js';
import { OverviewPage } from './pages/overview.js';
import { RecordsPage } from './pages/records.js';
import { ShareGroupPage } from './pages/share-group.js';
import { TopicPage } from './pages/topic.js';
import { TriggerPage } from './pages/trigger.js';
import { TriggersPage } from './pages/triggers.js';
import './styles.css';

/** Hash routes, so the server serves one page whatever the path prefix: #/, #/topics/t, #/topics/t/records, #/groups, #/groups/g, #/share-groups/g, #/triggers, #/triggers/t. */
function route(hash: string) {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(query) };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function Page({ hash }: { hash: string }) {
  const { parts, query } = route(hash);
  const [a, b, c] = parts;
  if (a === 'topics' && b && c === 'records') return <RecordsPage topic={b} query={query} />;
  if (a === 'topics' && b) return <TopicPage topic={b} />;
  if (a === 'groups' && b) return <GroupPage group={b} />;
  if (a === 'groups') return <GroupsPage />;
  if (a === 'share-groups' && b) return <ShareGroupPage group={b} />;
  if (a === 'triggers' && b) return <TriggerPage trigger={b} />;
  if (a === 'triggers') return <TriggersPage />;
  return <OverviewPage />;
}

/** The release the server runs (the cluster resource's `version`), shown beside the name. */
function useRelease(): string | undefined {
  const [release, setRelease] = useState<string>();
  useEffect(() => {
    api<{ version?: string }>('').then(
      (c) => setRelease(c.version),
      () => {},
    );
  }, []);
  return release;
}

function App() {
  const hash = useHash();
  const release = useRelease();
  const section = route(hash).parts[0] ?? '';
  const first = useRef(true);
  useEffect(() => {
    if (first.current) return void (first.current = false);
    // Move focus to the new page's heading, so keyboard and screen-reader users land on it.
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [hash]);
  const link = (href: string, label: string, current: boolean) => (
    <a href={href} aria-current={current ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <>
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link; the click focuses main without touching the hash the router reads */}
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header>
        <span class="brand">s3-kafka-log</span>
        {release && <span class="release">{release}</span>}
        <nav aria-label="Main">
          {link('#/', 'Overview', section === '')}
          {link('#/groups', 'Groups', section === 'groups' || section === 'share-groups')}
          {link('#/triggers', 'Triggers', section === 'triggers')}
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <Page hash={hash} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
